"""The web studio: server and routes (`server`), auth, file routes, background jobs, one module per page."""

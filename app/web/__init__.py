"""The web studio: server and routes (`server`), auth, file routes, background jobs, one module per page."""
from app.web import gradio_stubs

gradio_stubs.install()      # before any page imports Gradio: its stub writing is CPU the app never uses

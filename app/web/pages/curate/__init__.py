"""The curate page: page.py layout and actions, view.py + curate_*.html its HTML, api.py its JSON API, curate.js and hotkeys.js its client."""

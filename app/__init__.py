"""The user-facing layer: the `mvp` CLI and the Gradio web app."""

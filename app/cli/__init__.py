"""The `mvp` command: `main` in app/cli/main.py, one module per subcommand beside it."""
from app.cli.main import main

__all__ = ["main"]

"""`mvp`: one CLI whose subcommands the UI also uses (docs/ARCHITECTURE.md, "Interfaces").

Each subcommand lives in its own `app/cli/<name>.py` module with `register(subparsers)`; heavy imports
happen inside the handlers so `mvp --help` stays fast."""
from __future__ import annotations

import argparse
import importlib
import sys

from mvp_core.errors import UserError

COMMAND_MODULES = [
    "app.cli.synth",
    "app.cli.audit",
    "app.cli.model",
    "app.cli.db",
    "app.cli.users",
    "app.cli.export",
    "app.cli.serve",
    "app.cli.demo",
    "app.cli.train",
    "app.cli.videos",
    "app.cli.sft",
    "app.cli.steer",
    "app.cli.import_run",
]


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="mvp", description="MVP Studio: masked video prediction puzzles")
    sub = parser.add_subparsers(dest="command", required=True)
    for name in COMMAND_MODULES:
        importlib.import_module(name).register(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    try:
        args = build_parser().parse_args(argv)
        return int(args.func(args) or 0)
    except ModuleNotFoundError as e:
        top = (e.name or "").split(".")[0]
        if not top or top in sys.stdlib_module_names or top in ("app", "db", "mvp_core"):
            raise
        # the package alone is the reward and export side (pyproject.toml); the rest is the [studio] extra
        print(f"error: {top} is not installed; the studio's dependencies are its [studio] extra: "
              f"pip install 'mvp-studio[studio]'", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
    except UserError as e:  # a clear one-line error, no traceback
        print(f"error: {e}", file=sys.stderr)
        return 2
    except OSError as e:    # a path the user gave that cannot be read or written: the OS's reason, one line
        where = f": {e.filename}" if getattr(e, "filename", None) else ""
        print(f"error: {e.strerror or e}{where}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())

"""`mvp`: one CLI whose subcommands the UI also uses (DESIGN §4).

Each subcommand lives in its own `app/cmd_*.py` module with `register(subparsers)`; heavy imports
happen inside the handlers so `mvp --help` stays fast."""
from __future__ import annotations

import argparse
import importlib
import sys

from mvp_core.errors import UserError

COMMAND_MODULES = [
    "app.cmd_synth",
    "app.cmd_audit",
    "app.cmd_model",
    "app.cmd_db",
    "app.cmd_users",
    "app.cmd_export",
    "app.cmd_serve",
    "app.cmd_demo",
    "app.cmd_train",
]


def add_db_args(p) -> None:
    """The --db / --data pair most subcommands take (DESIGN §4)."""
    p.add_argument("--db", help="database URL (default MVP_DATABASE_URL or SQLite in the data directory)")
    p.add_argument("--data", help="data directory (default MVP_DATA_DIR or ./data)")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="mvp", description="MVP Studio: masked video prediction puzzles")
    sub = parser.add_subparsers(dest="command", required=True)
    for name in COMMAND_MODULES:
        importlib.import_module(name).register(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return int(args.func(args) or 0)
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
    except UserError as e:  # a clear one-line error, no traceback
        print(f"error: {e}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())

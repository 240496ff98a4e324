"""Argument helpers every subcommand shares, so a flag means the same thing everywhere."""
from __future__ import annotations


def add_db_args(p, *, db_required_for: str = "") -> None:
    """The --db / --data pair (see docs/ARCHITECTURE.md, "Interfaces")."""
    extra = f" for {db_required_for}" if db_required_for else ""
    p.add_argument("--db", help=f"database URL{extra} (default $MVP_DATABASE_URL or SQLite in the data directory)")
    p.add_argument("--data", help=f"data directory{extra} (default $MVP_DATA_DIR or ./data)")

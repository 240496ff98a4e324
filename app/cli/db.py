"""`mvp db upgrade|current|backup|import|set-overlap` and `mvp import`: the database by hand."""
from __future__ import annotations

import json

from app.cli.args import add_db_args


def register(sub) -> None:
    p = sub.add_parser("db", help="database maintenance: migrations, import, review settings")
    dsub = p.add_subparsers(dest="db_command", required=True)
    q = dsub.add_parser("upgrade", help="apply the Alembic migrations up to head (the CLI also does it on open)")
    add_db_args(q)
    q.set_defaults(func=_upgrade)
    q = dsub.add_parser("current", help="print the schema revision of the database and of the code")
    add_db_args(q)
    q.set_defaults(func=_current)
    q = dsub.add_parser("backup", help="a consistent copy of the database while the app runs "
                                       "(SQLite: online backup API; PostgreSQL: pg_dump)")
    q.add_argument("out", help="the backup file to write (must not exist)")
    add_db_args(q)
    q.set_defaults(func=_backup)
    q = dsub.add_parser("import", help="import a jsonl set export (same set, same hash)")
    _import_args(q)
    q = dsub.add_parser("set-overlap", help="how many decisive reviews each puzzle needs (k)")
    q.add_argument("k", type=int)
    add_db_args(q)
    q.set_defaults(func=_set_overlap)
    p = sub.add_parser("import", help="import a jsonl set export made by `mvp export --format jsonl`")
    _import_args(p)


def _import_args(p) -> None:
    p.add_argument("path", help="the export folder (holds set.json and puzzles.jsonl)")
    p.add_argument("--name", help="store the set under another name")
    add_db_args(p)
    p.set_defaults(func=_import)


def _upgrade(args) -> int:
    from db.engine import current_revision, database_url, upgrade, user_engine
    engine = user_engine(database_url(args.db, args.data))
    before = current_revision(engine)
    upgrade(engine)
    print(f"schema: {before or 'empty'} -> {current_revision(engine)}")
    return 0


def _backup(args) -> int:
    from pathlib import Path

    from db.backup import backup
    from db.engine import database_url, user_engine
    engine = user_engine(database_url(args.db, args.data))
    try:
        print(json.dumps(backup(engine, Path(args.out))))
    finally:
        engine.dispose()
    return 0


def _current(args) -> int:
    from db.engine import current_revision, database_url, head_revision, user_engine
    engine = user_engine(database_url(args.db, args.data))
    print(json.dumps({"database": current_revision(engine), "head": head_revision()}))
    return 0


def _import(args) -> int:
    from pathlib import Path

    from db.engine import data_dir, open_db
    from db.sets.importer import import_set
    Session = open_db(args.db, args.data)
    with Session() as s:
        out = import_set(s, Path(args.path), data_dir(args.data), name=args.name)
    print(json.dumps(out))
    return 0


def _set_overlap(args) -> int:
    from db.engine import open_db
    from db.review import set_overlap
    with open_db(args.db, args.data)() as s:
        set_overlap(s, args.k)
    print(f"overlap k = {args.k}")
    return 0

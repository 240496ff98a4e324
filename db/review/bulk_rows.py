"""How the bulk paths (db/review/bulk.py; tags.py insert_tags) send many ids and many rows: on
PostgreSQL a list of ids is one array parameter (`= ANY(...)`) and many rows are one INSERT or UPDATE
over `unnest` of one array per column; elsewhere (SQLite, in process) ids go in `db.chunks` chunks
and rows by executemany.

Why: on PostgreSQL each 500-id IN list is a statement to parse and plan, and executemany sends and
binds every row, so 10,000 puzzles were seconds per step (docs/BENCHMARKS.md, "Gallery"); one array
per column is one statement whatever the count. The values stored are the same either way: JSON
columns get the text json.dumps gives (SQLAlchemy's JSON type sends the same)."""
from __future__ import annotations

import json
from collections.abc import Iterator, Sequence

from sqlalchemy import ARRAY, JSON, String, Table, any_, bindparam, text
from sqlalchemy.orm import Session

from db.chunks import in_chunks


def _pg(session: Session) -> bool:
    return session.get_bind().dialect.name == "postgresql"


def id_chunks(session: Session, ids: Sequence[str]) -> Iterator[Sequence[str]]:
    """The ids in as few pieces as the engine takes in one statement (all of them on PostgreSQL)."""
    if _pg(session):
        if ids:
            yield ids
        return
    yield from in_chunks(ids)


def among(session: Session, column, ids: Sequence[str]):
    """`column IN ids` for one piece of `id_chunks`: one array parameter on PostgreSQL."""
    if _pg(session):
        return column == any_(bindparam(None, list(ids), type_=ARRAY(String)))
    return column.in_(ids)


def insert_rows(session: Session, table: Table, rows: list[dict]) -> None:
    """INSERT the rows (dicts with the same keys) into `table` in the caller's transaction."""
    if not rows:
        return
    if not _pg(session):
        session.execute(table.insert(), rows)
        return
    cols = list(rows[0])
    dialect = session.get_bind().dialect
    casts, params = [], {}
    for i, c in enumerate(cols):
        col = table.c[c]
        values = [r[c] for r in rows]
        if isinstance(col.type, JSON):
            values = [json.dumps(v) for v in values]
        params[f"a{i}"] = values
        casts.append(f"CAST(:a{i} AS {col.type.compile(dialect)}[])")
    names = ", ".join(f'"{c}"' for c in cols)
    session.execute(text(f'INSERT INTO "{table.name}" ({names}) SELECT * FROM unnest({", ".join(casts)})'),
                    params)


def update_rows(session: Session, table: Table, key: str, rows: list[dict]) -> None:
    """UPDATE `table` SET the rows' other keys WHERE `key` matches (one row each; dicts with the
    same keys, named as the table's columns)."""
    if not rows:
        return
    cols = list(rows[0])
    if not _pg(session):
        stmt = table.update().where(table.c[key] == bindparam("k_" + key)).values(
            **{c: bindparam("k_" + c) for c in cols if c != key})
        session.execute(stmt, [{"k_" + c: r[c] for c in cols} for r in rows])
        return
    dialect = session.get_bind().dialect
    casts = ", ".join(f"CAST(:a{i} AS {table.c[c].type.compile(dialect)}[])" for i, c in enumerate(cols))
    names = ", ".join(f'"{c}"' for c in cols)
    sets = ", ".join(f'"{c}" = v."{c}"' for c in cols if c != key)
    session.execute(text(f'UPDATE "{table.name}" AS t SET {sets} FROM unnest({casts}) AS v ({names}) '
                         f'WHERE t."{key}" = v."{key}"'),
                    {f"a{i}": [r[c] for r in rows] for i, c in enumerate(cols)})

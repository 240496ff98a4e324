"""Pulling table rows out of the store as Arrow: the pooled SQLAlchemy connection for small pulls,
PostgreSQL's Arrow-native ADBC driver for bulk ones (see the package docstring of db.analytics)."""
from __future__ import annotations

from operator import itemgetter

import pyarrow as pa
from sqlalchemy.engine import Engine

# A pull of more rows than this (the first call in a process, or a long gap) is a bulk pull: on
# PostgreSQL it goes through the Arrow-native ADBC driver (COPY in binary, Arrow buffers filled in C)
# instead of psycopg's fetchall plus a tuple-to-Arrow conversion. Smaller pulls keep the pooled
# connection (opening an ADBC connection costs a few ms, which warm calls should not pay).
BULK_MIN_ROWS = 20_000


def adbc_connect(engine: Engine):
    """An autocommit ADBC connection to the engine's PostgreSQL database, or None (other backends).
    Autocommit: an open read transaction would pin an old snapshot.

    Not for SQLite: the ADBC SQLite driver links its own copy of the SQLite library, and two copies in
    one process break each other's POSIX file locks on the same database (closing one copy's file
    descriptor drops the other's locks): tried, it gave stale reads and "disk I/O error" on the
    sqlite3 connections of the same process."""
    url = engine.url
    if url.get_backend_name() == "postgresql":
        import adbc_driver_postgresql.dbapi
        uri = url.set(drivername="postgresql").render_as_string(hide_password=False)
        return adbc_driver_postgresql.dbapi.connect(uri, autocommit=True)
    return None


def arrow_adbc(adbc, dialect, stmt, names: list[str]) -> pa.Table:
    sql = str(stmt.compile(dialect=dialect, compile_kwargs={"literal_binds": True}))
    cur = adbc.cursor()
    try:
        cur.execute(sql)
        t = cur.fetch_arrow_table()
    finally:
        cur.close()
    return t.rename_columns(names)


_PA_TYPES = {"BIGINT": pa.int64(), "VARCHAR": pa.string(), "DOUBLE": pa.float64()}


def arrow_table(conn, stmt, names: list[str], types: list[str] | None = None) -> pa.Table:
    """Run a Core select on the raw DBAPI cursor (plain tuples: no Row objects, no per-value type
    processing) and build an Arrow table column by column. Only integer cursors are bound, so the
    statement is rendered with literal values. With `types` (DuckDB type names) the Arrow arrays are
    built typed: ~3x faster than letting Arrow infer them, and `map(itemgetter)` per column is ~2x
    faster than transposing with zip(*rows) (700k options: 0.5 s instead of 1.8 s)."""
    sql = str(stmt.compile(dialect=conn.dialect, compile_kwargs={"literal_binds": True}))
    cur = conn.connection.dbapi_connection.cursor()
    try:
        cur.execute(sql)
        rows = cur.fetchall()
    finally:
        cur.close()
    if not rows:
        return pa.table({n: pa.array([], pa.null()) for n in names})
    if types is None:
        return pa.table({n: pa.array(c) for n, c in zip(names, zip(*rows))})
    return pa.table({n: pa.array(list(map(itemgetter(i), rows)), type=_PA_TYPES[t])
                     for i, (n, t) in enumerate(zip(names, types))})

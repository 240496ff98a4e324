"""Engines and sessions for SQLite (default, one file in the data directory) and PostgreSQL.

SQLite gets WAL (readers never block the writer), a busy timeout (writers wait instead of failing
with "database is locked") and foreign keys on, on every connection. Transactions start with
`BEGIN IMMEDIATE`: pysqlite's default (a deferred BEGIN sent just before the first write) lets two
transactions both read and then both try to write, and the loser gets SQLITE_BUSY at once, without
waiting on the busy timeout -- "database is locked" would reach the caller. Read-only work can ask for
a deferred BEGIN with `engine.execution_options(sqlite_begin="DEFERRED")` (see `read_engine`).

The schema is managed by Alembic (db/migrations); `upgrade` runs `alembic upgrade head` in-process."""
from __future__ import annotations

import os
from pathlib import Path

from sqlalchemy import create_engine, event, text
from sqlalchemy.engine import Engine
from sqlalchemy.orm import sessionmaker

SQLITE_BUSY_TIMEOUT_MS = 30_000
MIGRATIONS_DIR = Path(__file__).resolve().parent / "migrations"
# Any constant: the PostgreSQL advisory lock that serialises concurrent `upgrade` calls.
_UPGRADE_LOCK_KEY = 0x6D7670  # "mvp"


def data_dir(explicit: str | os.PathLike | None = None) -> Path:
    """--data, else MVP_DATA_DIR, else ./data."""
    return Path(explicit or os.environ.get("MVP_DATA_DIR") or "data").resolve()


def database_url(explicit: str | None = None, data: str | os.PathLike | None = None) -> str:
    """--db, else MVP_DATABASE_URL, else SQLite in the data directory."""
    url = explicit or os.environ.get("MVP_DATABASE_URL")
    if url:
        return url
    d = data_dir(data)
    d.mkdir(parents=True, exist_ok=True)
    return f"sqlite:///{d / 'mvp.sqlite'}"


def make_engine(url: str, **kw) -> Engine:
    if url.startswith("sqlite"):
        engine = create_engine(url, connect_args={"timeout": SQLITE_BUSY_TIMEOUT_MS / 1000,
                                                  "check_same_thread": False}, **kw)

        @event.listens_for(engine, "connect")
        def _pragmas(dbapi_conn, _record):
            dbapi_conn.isolation_level = None   # we send BEGIN ourselves (below)
            cur = dbapi_conn.cursor()
            if ":memory:" not in url and url not in ("sqlite://", "sqlite:///"):
                cur.execute("PRAGMA journal_mode=WAL")
            cur.execute(f"PRAGMA busy_timeout={SQLITE_BUSY_TIMEOUT_MS}")
            cur.execute("PRAGMA foreign_keys=ON")
            cur.execute("PRAGMA synchronous=NORMAL")
            cur.close()

        @event.listens_for(engine, "begin")
        def _begin(conn):
            mode = conn.get_execution_options().get("sqlite_begin", "IMMEDIATE")
            conn.exec_driver_sql(f"BEGIN {mode}")
        return engine
    return create_engine(url, pool_pre_ping=True, **kw)


def read_engine(engine: Engine) -> Engine:
    """The same engine, but SQLite transactions begin deferred (for read-only work such as analytics)."""
    return engine.execution_options(sqlite_begin="DEFERRED")


def alembic_config(engine: Engine | None = None):
    from alembic.config import Config
    cfg = Config()
    cfg.set_main_option("script_location", str(MIGRATIONS_DIR))
    if engine is not None:
        cfg.set_main_option("sqlalchemy.url", engine.url.render_as_string(hide_password=False)
                            .replace("%", "%%"))
    return cfg


def current_revision(engine: Engine) -> str | None:
    from alembic.runtime.migration import MigrationContext
    with engine.connect() as conn:
        return MigrationContext.configure(conn).get_current_revision()


def head_revision() -> str:
    from alembic.script import ScriptDirectory
    return ScriptDirectory.from_config(alembic_config()).get_current_head()


def upgrade(engine: Engine, revision: str = "head") -> None:
    """Bring the schema up to date (`alembic upgrade head`); called by the CLI and the app on start.
    Safe when many processes open the same database at once: PostgreSQL takes an advisory lock,
    SQLite's BEGIN IMMEDIATE serialises the writers; the second one finds the schema current."""
    from alembic import command
    if revision == "head" and current_revision(engine) == head_revision():
        return   # the common case, without taking any lock
    cfg = alembic_config(engine)
    with engine.begin() as conn:
        if conn.dialect.name == "postgresql":
            conn.execute(text("SELECT pg_advisory_xact_lock(:k)"), {"k": _UPGRADE_LOCK_KEY})
        cfg.attributes["connection"] = conn
        command.upgrade(cfg, revision)


def user_engine(url: str) -> Engine:
    """make_engine for a URL a user gave (--db, MVP_DATABASE_URL), connected once: a malformed URL, a
    driver that is not installed, or a database that cannot be opened (a missing folder, a file that is
    not SQLite, a server that does not answer) is one UserError line, the password hidden."""
    from sqlalchemy.engine import make_url
    from sqlalchemy.exc import ArgumentError, NoSuchModuleError, SQLAlchemyError

    from mvp_core.errors import UserError
    try:
        parsed = make_url(url)
        shown = parsed.render_as_string(hide_password=True)
    except (ArgumentError, ValueError):        # the URL is not echoed: it may hold a password
        raise UserError("the database URL (--db / MVP_DATABASE_URL) is malformed; expected "
                        "sqlite:///PATH or postgresql+psycopg://USER:PASSWORD@HOST/NAME") from None
    db_file = parsed.database if parsed.get_backend_name() == "sqlite" else None
    if db_file and db_file != ":memory:" and os.path.exists(db_file) and not os.path.isfile(db_file):
        # /dev/zero opens as an empty database and fails only on the first write
        raise UserError(f"database {shown}: {db_file} is not a file")
    if db_file and db_file != ":memory:":
        _sqlite_file(db_file, shown)
    try:
        engine = make_engine(url)
        with engine.connect() as conn:
            conn.exec_driver_sql("SELECT 1")
    except (NoSuchModuleError, ImportError) as e:
        raise UserError(f"database {shown}: no driver for this URL ({str(e).splitlines()[0]})") from None
    except SQLAlchemyError as e:
        why = str(getattr(e, "orig", None) or e).strip().splitlines()[0]
        if db_file and db_file != ":memory:":       # "unable to open database file" does not say why
            from db.faults import folder_problem
            if "malformed" in why:                  # damaged pages met while connecting: as quick_check says
                raise UserError(_damaged(shown, why)) from None
            why = folder_problem(os.path.dirname(os.path.abspath(db_file))) or why
        raise UserError(f"cannot open database {shown} ({why})") from None
    return engine


def _sqlite_file(path: str, shown: str) -> None:
    """A zero-byte file is refused (SQLite would silently make it a new, empty studio with no users: a
    truncated database must be restored, not replaced); a new database file is created readable by its
    owner only (0600: it holds password hashes and sessions).

    A new file is made whole under a private name and linked into place (link fails if the name
    exists), so a process opening the same new database at the same moment never sees it at 0 bytes
    and takes it for a truncated one."""
    import sqlite3

    from mvp_core.errors import UserError
    try:
        if os.path.getsize(path) == 0:
            raise UserError(f"database {shown} is an empty file (0 bytes): refusing to start over it; "
                            "restore it from a backup, or delete it to start a new studio")
        return
    except FileNotFoundError:
        pass
    folder = os.path.dirname(path) or "."
    if not os.path.isdir(folder):
        return            # connecting below says the folder is missing
    tmp = os.path.join(folder, f".{os.path.basename(path)}.new-{os.getpid()}")
    try:
        os.close(os.open(tmp, os.O_CREAT | os.O_TRUNC | os.O_WRONLY, 0o600))
        conn = sqlite3.connect(tmp)
        try:
            conn.execute("PRAGMA user_version = 0")   # writes the header page: the file is a database
            conn.commit()
        finally:
            conn.close()
        try:
            os.link(tmp, path)
        except FileExistsError:
            pass          # another process made it first: theirs is used
    except (OSError, sqlite3.Error):
        pass              # e.g. a read-only folder: connecting below says what is wrong
    finally:
        try:
            os.unlink(tmp)
        except OSError:
            pass


def quick_check(engine: Engine) -> None:
    """PRAGMA quick_check on a SQLite database (run when the server starts): a database with damaged pages
    is refused with one line instead of being served until requests crash ("malformed")."""
    from sqlalchemy.exc import SQLAlchemyError

    from mvp_core.errors import UserError
    if engine.dialect.name != "sqlite":
        return
    shown = engine.url.render_as_string(hide_password=True)
    try:
        with engine.connect() as conn:
            rows = [r[0] for r in conn.exec_driver_sql("PRAGMA quick_check").fetchall()]
    except SQLAlchemyError as e:
        why = str(getattr(e, "orig", None) or e).strip().splitlines()[0]
        raise UserError(_damaged(shown, why)) from None
    if rows != ["ok"]:
        raise UserError(_damaged(shown, rows[0][:200]))


def _damaged(shown: str, why: str) -> str:
    return f"database {shown} fails its integrity check ({why}); restore it from a backup"


def open_db(url: str | None = None, data: str | os.PathLike | None = None, check: bool = False) -> sessionmaker:
    """Sessions on the database (schema brought up to date); `check`: run quick_check first (the server)."""
    from db.paths import bind_data_dir
    engine = user_engine(database_url(url, data))
    bind_data_dir(engine, data_dir(data))   # stored paths are relative to it (db/paths.py)
    if check:
        quick_check(engine)
    upgrade(engine)
    return sessionmaker(engine, expire_on_commit=False)

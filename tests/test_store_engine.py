"""Engines and migrations: the Alembic head matches the models, upgrade is idempotent and safe when
several processes open a new database at once, SQLite pragmas are on, on both engines."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext
from sqlalchemy import inspect, text

from db.engine import current_revision, head_revision, make_engine, upgrade
from db.models import Base

ROOT = Path(__file__).resolve().parent.parent


def test_migrations_match_models(empty_store_any):
    """`alembic upgrade head` creates exactly the tables/columns/indexes the models declare, so a
    model change without a migration fails here (write one with `alembic revision --autogenerate`)."""
    eng = empty_store_any.engine
    with eng.connect() as c:
        diff = compare_metadata(MigrationContext.configure(c, opts={"compare_type": True}), Base.metadata)
    assert diff == []
    assert current_revision(eng) == head_revision()
    assert set(Base.metadata.tables) <= set(inspect(eng).get_table_names())


def test_upgrade_is_idempotent_and_trigger_fills_queue(empty_store_any):
    eng = empty_store_any.engine
    upgrade(eng)
    upgrade(eng)
    with eng.begin() as c:
        c.execute(text("INSERT INTO videos (id, sha256, path, fps, duration_s, width, height, created_at) "
                       "VALUES ('v', 's', 'p', 1, 1, 1, 1, '2024-01-01')"))
        c.execute(text("INSERT INTO puzzles (id, video_id, params_key, mask_start, mask_length, n_options, "
                       "record_json, created_at) VALUES ('p1', 'v', 'k', 1, 1, 1, '{}', '2024-01-01')"))
        assert c.execute(text("SELECT puzzle_id, status FROM review_state")).all() == [("p1", "pending")]


def test_a_puzzle_added_without_the_trigger_is_still_handed_out(empty_store_any):
    """The claim's repair path: with no trigger, a new puzzle has no queue row; the first claim that
    finds nothing queues it and hands it out, and a claim with nothing missing adds no row."""
    from sqlalchemy.orm import Session

    from db.review import next_puzzle
    from db.users.accounts import add_user
    eng = empty_store_any.engine
    with Session(eng) as s:
        uid = add_user(s, "cur-sync", "curator", "cur-sync-password")[0].id
        s.commit()
    pg = eng.dialect.name == "postgresql"     # the PostgreSQL database is shared: disable, then enable
    with eng.begin() as c:
        c.execute(text("ALTER TABLE puzzles DISABLE TRIGGER trg_puzzles_review_state" if pg
                       else "DROP TRIGGER trg_puzzles_review_state"))
        c.execute(text("INSERT INTO videos (id, sha256, path, fps, duration_s, width, height, created_at) "
                       "VALUES ('v', 's', 'p', 1, 1, 1, 1, '2024-01-01')"))
        c.execute(text("INSERT INTO puzzles (id, video_id, params_key, mask_start, mask_length, n_options, "
                       "record_json, created_at) VALUES ('p1', 'v', 'k', 1, 1, 1, '{}', '2024-01-01')"))
        assert c.execute(text("SELECT count(*) FROM review_state")).scalar() == 0
    try:
        with Session(eng) as s:
            assert next_puzzle(s, uid) == "p1"
            s.commit()
        with eng.connect() as c:
            assert c.execute(text("SELECT puzzle_id, status FROM review_state")).all() == [("p1", "pending")]
    finally:
        if pg:
            with eng.begin() as c:
                c.execute(text("ALTER TABLE puzzles ENABLE TRIGGER trg_puzzles_review_state"))


def test_sqlite_pragmas_and_concurrent_first_open(tmp_path):
    url = f"sqlite:///{tmp_path / 'new.sqlite'}"
    code = ("import sys; sys.path.insert(0, %r); from db.engine import open_db; open_db(%r)" % (str(ROOT), url))
    procs = [subprocess.Popen([sys.executable, "-c", code], stderr=subprocess.PIPE, text=True) for _ in range(4)]
    errs = [p.communicate(timeout=120)[1] for p in procs]
    assert [p.returncode for p in procs] == [0] * 4, errs
    eng = make_engine(url)
    with eng.connect() as c:
        assert c.exec_driver_sql("PRAGMA journal_mode").scalar() == "wal"
        assert c.exec_driver_sql("PRAGMA foreign_keys").scalar() == 1
        assert c.exec_driver_sql("PRAGMA busy_timeout").scalar() == 30000
    assert current_revision(eng) == head_revision()
    eng.dispose()


def test_cli_db_upgrade_and_current(tmp_path):
    from app.cli import main
    assert main(["db", "upgrade", "--data", str(tmp_path / "d")]) == 0
    assert (tmp_path / "d" / "mvp.sqlite").is_file()
    assert main(["users", "add", "ann", "--role", "admin", "--password", "ann-password-1", "--data", str(tmp_path / "d")]) == 0
    assert main(["users", "add", "ann", "--data", str(tmp_path / "d")]) == 2        # exists: one-line error
    assert main(["db", "set-overlap", "0", "--data", str(tmp_path / "d")]) == 2

"""Fixtures for the engine-side tests (tests/test_import_run.py, tests/test_scale_recipe.py): a data
directory and SQLite store holding the sample puzzles (the real `mvp synth` output of
tests/fixtures_store.py), all accepted by a curator and frozen as set `imp` with splits by video,
and the set's real `mvp export --format verl`, `easyr1` and `trl` folders. Session-scoped: the
exports are only read; the import tests add runs of their own names to the store."""
from __future__ import annotations

import shutil

import pytest

ENGINE_SET = "imp"


@pytest.fixture(scope="session")
def engine_set(store_puzzles, store_sqlite_template, tmp_path_factory, tiny_model_dir) -> dict:
    """{base, data, url, Session, records (id -> the set's record), exports (format -> folder),
    model (the tiny Qwen2.5-VL: a run's base model)}."""
    from app.cli import main
    from db.engine import open_db
    from db.sets.curated import load_set
    from testkit.store import accept_and_freeze
    base = tmp_path_factory.mktemp("engine-set")
    src, records = store_puzzles
    data = base / "data"
    shutil.copytree(src / "frames", data / "frames")
    shutil.copy(store_sqlite_template, data / "mvp.sqlite")
    url = f"sqlite:///{data / 'mvp.sqlite'}"
    Session = open_db(url, data)
    accept_and_freeze(Session, records, ENGINE_SET, {"train": 0.5, "val": 0.25, "test": 0.25})
    with Session() as s:
        recs = {r["id"]: r for r in load_set(s, ENGINE_SET)}
    exports = {}
    for fmt in ("verl", "easyr1", "trl"):
        exports[fmt] = base / f"export-{fmt}"
        assert main(["export", "--set", ENGINE_SET, "--format", fmt, "--out", str(exports[fmt]),
                     "--db", url, "--data", str(data)]) == 0
    return {"base": base, "data": data, "url": url, "Session": Session, "records": recs, "exports": exports,
            "model": tiny_model_dir}

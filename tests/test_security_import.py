"""A set export whose records repeat a puzzle id (manifest hash made to match) is refused with one line,
by `mvp import` and by import_set, before anything is stored or copied: no set, no puzzle, no frame
(it used to end in a raw IntegrityError traceback from the set items' unique key). SQLite and PostgreSQL."""
from __future__ import annotations

import json

import pytest
from sqlalchemy import func, select

from app.cli import main
from db.models import Puzzle, Video
from db.sets.curated import content_hash, list_sets, store_set
from db.sets.importer import import_set
from mvp_core.errors import UserError


@pytest.fixture
def duplicated_export(store_db, tmp_path):
    """A real `mvp export` of a set, then its first record repeated at the end, the manifest's hash redone."""
    recs = sorted(store_db.records, key=lambda r: r["id"])[:4]
    lines = [json.dumps(r, sort_keys=True, separators=(",", ":"), ensure_ascii=False) for r in recs]
    with store_db.Session() as s:
        store_set(s, "dup-src", lines, 0, 0, {})
        s.commit()
    out = tmp_path / "export"
    assert main(["export", "--set", "dup-src", "--format", "jsonl", "--out", str(out),
                 "--db", store_db.url, "--data", str(store_db.data_dir)]) == 0
    body = (out / "puzzles.jsonl").read_text().splitlines()
    body.append(body[0])
    (out / "puzzles.jsonl").write_text("\n".join(body) + "\n")
    manifest = json.loads((out / "set.json").read_text())
    (out / "set.json").write_text(json.dumps({**manifest, "content_hash": content_hash(body)}))
    return out, json.loads(body[0])["id"], len(body)


def _stored(Session) -> tuple:
    with Session() as s:
        return (list_sets(s), s.scalar(select(func.count()).select_from(Puzzle)),
                s.scalar(select(func.count()).select_from(Video)))


def test_duplicate_id_import_is_one_line_and_stores_nothing(duplicated_export, empty_store, tmp_path, capsys):
    out, pid, n = duplicated_export
    data2 = tmp_path / "data2"
    capsys.readouterr()
    assert main(["import", str(out), "--db", empty_store.url, "--data", str(data2), "--name", "dup"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "Traceback" not in err and "IntegrityError" not in err, err
    assert f"puzzle id {pid!r} appears twice" in err and f"lines 1 and {n}" in err, err
    with empty_store.Session() as s, pytest.raises(UserError, match="appears twice"):
        import_set(s, out, data2, name="dup")
    assert _stored(empty_store.Session) == ([], 0, 0)
    assert not (data2 / "frames").exists() or not any((data2 / "frames").rglob("*.jpg"))

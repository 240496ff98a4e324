"""Server paths a web user names lie under the roots the admin allows (mvp_core/roots.py, docs/security.md
"Server paths"): the Data page's folder box, the Train page's typed model path and the config keys
eval_puzzles / eval_data_dir. A path outside the roots is refused before anything opens it, with the
same line whether it exists, is a file, a folder or a symlink; nothing is launched. SQLite and
PostgreSQL (the allowed folders are a stored setting)."""
from __future__ import annotations

import os
import shutil

import pytest

from app.web import jobs
from db.puzzles.sources import add_folder, set_allowed_roots
from mvp_core.errors import UserError
from mvp_core.roots import inside_roots

# outside every root: an existing secret-ish file, an existing folder, something that does not exist
OUTSIDE = ("/etc/passwd", "/etc", "/no/such/place-h5", "/root")


def _error(fn) -> str:
    with pytest.raises(UserError) as e:
        fn()
    msg = str(e.value)
    assert "\n" not in msg, msg
    return msg


def _shape(msg: str, path: str) -> str:
    """The message with the path itself taken out: what it says about the path."""
    return msg.replace(path, "<P>")


@pytest.fixture
def studio(empty_store_any, tmp_path, tiny_model_dir):
    """(data dir with a model in it, Session, an allowed video root)."""
    data = tmp_path / "data"
    (data / "models").mkdir(parents=True)
    shutil.copytree(tiny_model_dir, data / "models" / "tiny")
    root = tmp_path / "videos"
    (root / "a").mkdir(parents=True)
    (root / "escape").symlink_to("/etc")              # a link inside the root leading out of it
    with empty_store_any.Session() as s:
        set_allowed_roots(s, [str(root)])
    return data, empty_store_any.Session, root


def test_data_folder_box_tells_nothing_outside_the_roots(studio):
    _data, Session, root = studio
    with Session() as s:
        shapes = {_shape(_error(lambda: add_folder(s, p)), p) for p in (*OUTSIDE, str(root / "escape"))}
        assert len(shapes) == 1 and "outside the allowed folders" in shapes.pop()
        assert add_folder(s, str(root / "a")) == str((root / "a").resolve())
        # inside the roots it may say what is missing: that is the admin's own folder
        assert "no such folder" in _error(lambda: add_folder(s, str(root / "nope")))


def _launch(data, Session, model, yaml_text="", overrides=()):
    return jobs.launch(data, Session, set_name="any", model=model, yaml_text=yaml_text,
                       overrides=list(overrides), user="rhea")


def test_typed_model_path_outside_the_roots(studio):
    data, Session, root = studio
    shapes = {_shape(_error(lambda: _launch(data, Session, p)), p) for p in OUTSIDE}
    assert shapes == {"model <P> is outside the allowed folders "
                      f"({(data.resolve())}, {root.resolve()})"}, shapes
    assert jobs.active(data) is None and not (data / "runs").exists()


@pytest.mark.parametrize("key", ["eval_puzzles", "eval_data_dir"])
def test_config_paths_outside_the_roots_are_never_opened(studio, key):
    """eval_puzzles=/etc/shadow used to make the trainer open it (as root) and log whether it was JSON."""
    data, Session, _root = studio
    model = str(data / "models" / "tiny")
    shapes = set()
    for p in OUTSIDE:
        shapes.add(_shape(_error(lambda: _launch(data, Session, model, yaml_text=f"{key}: {p}\n")), p))
        shapes.add(_shape(_error(lambda: _launch(data, Session, model, overrides=[f"{key}={p}"])), p))
    assert len(shapes) == 1 and shapes.pop().startswith(f"{key} <P> is outside the allowed folders"), shapes
    assert jobs.active(data) is None and not (data / "runs").exists()


def test_roots_rule_follows_links_and_admits_what_is_inside(tmp_path):
    root = tmp_path / "root"
    (root / "d").mkdir(parents=True)
    (root / "d" / "x.jsonl").write_text("{}\n")
    (root / "out").symlink_to(tmp_path)
    roots = [str(root)]
    assert inside_roots(roots, str(root / "d" / "x.jsonl"), "eval_puzzles", "file") == root / "d" / "x.jsonl"
    assert inside_roots(roots, str(root / "d"), "eval_data_dir", "dir") == root / "d"
    for p, kind in ((root / "out", "dir"), (root / "d" / ".." / "..", "dir")):
        assert "outside the allowed folders" in _error(lambda: inside_roots(roots, str(p), "x", kind))
    assert "absolute path" in _error(lambda: inside_roots(roots, "d/x.jsonl", "x", "file"))
    assert "no such file" in _error(lambda: inside_roots(roots, str(root / "d"), "x", "file"))
    assert "outside" in _error(lambda: inside_roots([], os.getcwd(), "x", "any"))


def test_eval_puzzles_may_not_name_the_store(studio):
    """Inside the roots, eval_puzzles still may not be the database: the file itself, its WAL, a hard
    link to it, a renamed copy, a pg_dump file. Refused in one line before launch (the trainer used to
    open it and refuse it as "not UTF-8 text"); a real puzzles file passes this rule."""
    import sqlite3
    data, Session, _root = studio
    model = str(data / "models" / "tiny")
    db = data / "mvp.sqlite"
    con = sqlite3.connect(db)
    con.execute("PRAGMA journal_mode=WAL")
    con.execute("CREATE TABLE users (name TEXT, password_hash TEXT)")
    con.commit()                                   # kept open: the -wal file stays
    (data / "train").mkdir()
    os.link(db, data / "train" / "linked.jsonl")
    shutil.copyfile(db, data / "train" / "copy.jsonl")
    (data / "train" / "dump.jsonl").write_bytes(b"PGDMP\x01\x0e\x00" + b"\x00" * 64)
    try:
        for p in (db, data / "mvp.sqlite-wal", data / "train" / "linked.jsonl", data / "train" / "copy.jsonl",
                  data / "train" / "dump.jsonl"):
            msg = _error(lambda: _launch(data, Session, model, overrides=[f"eval_puzzles={p}"]))
            assert msg.startswith(f"eval_puzzles {p}") and "database" in msg, msg
        (data / "train" / "real.jsonl").write_text('{"id": "p1"}\n')
        msg = _error(lambda: _launch(data, Session, model, overrides=[f"eval_puzzles={data / 'train' / 'real.jsonl'}"]))
        assert "database" not in msg, msg              # refused later, for the unknown set
    finally:
        con.close()
    assert jobs.active(data) is None and not (data / "runs").exists()

"""Startup integrity (db/engine.py): a zero-byte mvp.sqlite is refused (not silently a new studio with no
users), a database with damaged pages is refused by `mvp serve` with one line (PRAGMA quick_check), and a
new database file is readable by its owner only (0600)."""
from __future__ import annotations

import sqlite3
import stat
import subprocess
import sys

import pytest
from fixtures_web import ROOT, free_port


def _mvp(*args: str, timeout: float = 300) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "app.cli", *args], cwd=ROOT, capture_output=True, text=True,
                          timeout=timeout)


def _one_line(res: subprocess.CompletedProcess) -> str:
    err = res.stderr.strip()
    assert res.returncode != 0 and "Traceback" not in err and len(err.splitlines()) == 1, (res.returncode, err)
    return err


@pytest.mark.serve
def test_zero_byte_database_is_refused_and_left_as_it_is(tmp_path):
    data = tmp_path / "data"
    data.mkdir()
    (data / "mvp.sqlite").write_bytes(b"")
    for cmd in (["users", "list"], ["serve", "--port", str(free_port())]):
        err = _one_line(_mvp(*cmd, "--data", str(data)))
        assert "empty file (0 bytes)" in err, err
    assert (data / "mvp.sqlite").stat().st_size == 0


def test_new_database_file_is_0600(tmp_path):
    data = tmp_path / "data"
    res = _mvp("users", "add", "owner", "--role", "admin", "--password", "owner-password-1", "--data", str(data))
    assert res.returncode == 0, res.stderr
    assert stat.S_IMODE((data / "mvp.sqlite").stat().st_mode) == 0o600


@pytest.mark.serve
def test_damaged_pages_are_refused_at_serve_start(tmp_path):
    data = tmp_path / "data"
    res = _mvp("users", "add", "owner", "--role", "admin", "--password", "owner-password-1", "--data", str(data))
    assert res.returncode == 0, res.stderr
    db = data / "mvp.sqlite"
    con = sqlite3.connect(db)
    con.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    con.execute("CREATE TABLE filler (x TEXT)")
    con.executemany("INSERT INTO filler VALUES (?)", [("y" * 500,)] * 400)
    con.commit()
    con.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    page = con.execute("PRAGMA page_size").fetchone()[0]
    root = con.execute("SELECT rootpage FROM sqlite_master WHERE name = 'filler'").fetchone()[0]
    con.close()
    raw = bytearray(db.read_bytes())
    # scribble over the filler table's pages after its root: the schema and the users still read
    for off in range(root * page, min(len(raw), (root + 20) * page), 7):
        raw[off] = 0xA5
    db.write_bytes(bytes(raw))
    con = sqlite3.connect(db)
    try:                                                # the damage is real
        healthy = con.execute("PRAGMA quick_check").fetchone()[0] == "ok"
    except sqlite3.DatabaseError:
        healthy = False
    con.close()
    assert not healthy
    err = _one_line(_mvp("serve", "--data", str(data), "--port", str(free_port()), timeout=120))
    assert "fails its integrity check" in err, err

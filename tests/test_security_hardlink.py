"""A hard link to the database inside a served folder (app/web/files.py): refused by its link count and
the database's inode, decided by stat alone, so serving or refusing it never opens the database file and
never drops the server's SQLite locks. After the requests, `mvp users list` opens the database beside the
server, 10 verdicts are acknowledged over the JSON API, the server is killed (SIGKILL) and restarted: all
10 are stored."""
from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import sys

import pytest
from fixtures_security import Server, http_login
from fixtures_web import ROOT, free_port

pytestmark = [pytest.mark.slow]


def _verdicts(c, n: int) -> list[tuple[str, str]]:
    """n verdicts through the curate page's JSON API (answer first, as the page does)."""
    done = []
    out = c.post("/curate/api/load", json={}).json()
    while len(done) < n:
        state, html = out["state"], out["html"]
        assert state.get("pid"), out
        m = int(re.search(r'data-m="(\d+)"', html).group(1))
        labels = list(dict.fromkeys(re.findall(r'data-label="([A-Z])"', html)))[:m]
        r = c.post("/curate/api/answer", json={"state": state, "labels": labels, "seconds": 1.0})
        assert r.status_code == 200, r.text
        verdict = "accept" if len(done) % 2 == 0 else "reject"
        r = c.post("/curate/api/verdict", json={"state": state, "verdict": verdict})
        assert r.status_code == 200 and r.json()["msg"].startswith(f"{verdict}: {state['pid']}"), r.text
        done.append((state["pid"], verdict))
        out = r.json()
    return done


def test_hard_link_to_the_database_is_refused_and_no_verdict_is_lost(web_data, tmp_path):
    from testkit.durability import prepare, wal_deleted
    from sqlalchemy import create_engine, text
    url, users, admin = prepare(web_data[0], tmp_path / "data", "sqlite", 60, 1)
    data = tmp_path / "data"
    frames = data / "frames"
    real = frames.resolve()
    frames.unlink()
    shutil.copytree(real, frames)                     # a real folder we may put links into
    db = data / "mvp.sqlite"
    os.link(db, frames / "db.jpg")
    a_frame = next(p for p in sorted(frames.rglob("*.jpg")) if p.name != "db.jpg")
    os.link(a_frame, frames / "twice.jpg")            # any file with two links: refused too
    srv = Server(data, url, free_port(), tmp_path / "serve.log").start()
    try:
        name, pw = next(iter(users.items()))
        cur, adm = http_login(srv.url, name, pw), http_login(srv.url, *admin)
        for c in (cur, adm):
            for route in ("/data/frames/db.jpg", "/thumb/frames/db.jpg", "/data/frames/twice.jpg"):
                r = c.get(route)
                assert r.status_code == 403 and b"SQLite format" not in r.content, (route, r.status_code)
                assert "\n" not in r.text.strip()
            assert c.get(f"/data/{a_frame.relative_to(data).as_posix()}").status_code == 403   # its other name has 2 links too
        res = subprocess.run([sys.executable, "-m", "app.cli", "users", "list", "--db", url, "--data", str(data)],
                             cwd=ROOT, capture_output=True, text=True, timeout=120)
        assert res.returncode == 0, res.stderr
        assert not wal_deleted(srv.proc.pid)
        done = _verdicts(cur, 10)
        assert not wal_deleted(srv.proc.pid)
        os.kill(srv.proc.pid, signal.SIGKILL)
        srv.proc.wait()
        srv.start()
    finally:
        srv.stop()
    eng = create_engine(url)
    with eng.connect() as con:
        stored = dict(con.execute(text("SELECT v.puzzle_id, v.verdict FROM puzzle_verdicts v JOIN users u "
                                       "ON u.id = v.user_id WHERE u.name = :n"), {"n": name}).all())
    eng.dispose()
    assert all(stored.get(p) == v for p, v in done) and len(done) == 10, (done, stored)

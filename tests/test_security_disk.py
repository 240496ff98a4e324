"""A full disk and a read-only data folder, for real (db/faults.py, docs/security.md "Disk full and
read-only"): `mvp serve` on a 8 MiB tmpfs holding the data folder; the disk is filled to the last byte;
a login, a verdict over the JSON API and an Admin page action are each answered with one line (507;
a page for the login, the page's message box for the Admin action) and the line is in the server's
log, with no traceback; after space is freed the same verdict goes through, and the database holds
exactly the acknowledged verdicts and passes its integrity check. A data folder on a read-only mount
is refused at start (the server, the CLI: one rule in db/engine.py) with one line that says so.
Needs root (mount). SQLite only: with PostgreSQL the database lives on the database server's disk."""
from __future__ import annotations

import json
import os
import re
import subprocess
import sys

import httpx
import pytest
from fixtures_security import gradio_event, gradio_page_session, http_login, login_form, post_login
from fixtures_web import ROOT, Server, free_port

from db.faults import FULL


@pytest.fixture
def tmpfs(tmp_path):
    assert os.geteuid() == 0, "this test mounts a small tmpfs: run it as root (the test machines do)"
    mnt = tmp_path / "mnt"
    mnt.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=8m,mode=0755", "tmpfs", str(mnt)], check=True)
    yield mnt
    subprocess.run(["umount", "-l", str(mnt)], check=False)


def _fill(mnt) -> None:
    """Write until the disk refuses even one more byte."""
    fd = os.open(mnt / "filler", os.O_WRONLY | os.O_CREAT, 0o600)
    try:
        for size in (65536, 1):
            try:
                while True:
                    os.write(fd, b"\0" * size)
            except OSError:
                pass
    finally:
        os.close(fd)


def _answer(c: httpx.Client, out: dict) -> dict:
    """Answer the shown puzzle as the page does (its verdict comes next); returns its state."""
    state, page = out["state"], out["html"]
    m = int(re.search(r'data-m="(\d+)"', page).group(1))
    labels = list(dict.fromkeys(re.findall(r'data-label="([A-Z])"', page)))[:m]
    r = c.post("/curate/api/answer", json={"state": state, "labels": labels, "seconds": 1.0})
    assert r.status_code == 200, r.text
    return state


@pytest.mark.slow
def test_full_disk_is_one_line_and_nothing_half_written(web_data, tmpfs, tmp_path):
    from sqlalchemy import create_engine, text
    from testkit.durability import prepare
    data = tmpfs / "data"
    url, users, admin = prepare(web_data[0], data, "sqlite", 12, 1)
    name, pw = next(iter(users.items()))
    log = tmp_path / "serve.log"
    srv = Server(data, url, free_port(), log).start()
    try:
        cur, adm = http_login(srv.url, name, pw), http_login(srv.url, *admin)
        session_hash, apis = gradio_page_session(adm, "admin")
        state = _answer(cur, cur.post("/curate/api/load", json={}).json())
        r = cur.post("/curate/api/verdict", json={"state": state, "verdict": "accept"})
        assert r.status_code == 200, r.text
        first, state = state["pid"], _answer(cur, r.json())
        second = state["pid"]
        _fill(tmpfs)
        mark = log.stat().st_size
        r = cur.post("/curate/api/verdict", json={"state": state, "verdict": "accept"})
        assert r.status_code == 507 and r.json() == {"error": FULL}, (r.status_code, r.text)
        c, tok = login_form(srv.url)
        r = post_login(c, tok, *admin)
        assert r.status_code == 507 and "text/html" in r.headers["content-type"], r.status_code
        assert re.findall(r'id="storage-error">([^<]*)<', r.text) == [FULL]
        ok, out = gradio_event(adm, "admin", session_hash, apis["add_user"], ["newbie", "curator", "newbie-password-1"])
        assert FULL in json.dumps(out), out
        said = log.read_text()[mark:]
        assert "Traceback" not in said and said.count(FULL) >= 3, said
        (tmpfs / "filler").unlink()
        r = cur.post("/curate/api/verdict", json={"state": state, "verdict": "accept"})
        assert r.status_code == 200 and r.json()["msg"].startswith(f"accept: {second}"), r.text
        assert http_login(srv.url, *admin).cookies.get("mvp_session")
    finally:
        srv.stop()
    eng = create_engine(url)
    with eng.connect() as con:
        assert con.exec_driver_sql("PRAGMA integrity_check").scalar() == "ok"
        stored = con.execute(text("SELECT v.puzzle_id FROM puzzle_verdicts v JOIN users u ON u.id = v.user_id "
                                  "WHERE u.name = :n ORDER BY v.puzzle_id"), {"n": name}).scalars().all()
        assert con.execute(text("SELECT count(*) FROM users WHERE name = 'newbie'")).scalar() == 0
    eng.dispose()
    assert stored == sorted([first, second])


def test_read_only_data_folder_is_refused_with_one_line(tmp_path):
    """It used to say only "unable to open database file"."""
    from db.engine import open_db
    from db.users.accounts import add_user
    data = tmp_path / "data"
    Session = open_db(None, data)
    with Session() as s:
        add_user(s, "ann", "admin", "ann-password-1")
        s.commit()
    Session.kw["bind"].dispose()
    view = tmp_path / "ro"
    view.mkdir()
    assert os.geteuid() == 0, "this test makes a read-only bind mount: run it as root"
    subprocess.run(["mount", "--bind", str(data), str(view)], check=True)
    try:
        subprocess.run(["mount", "-o", "remount,bind,ro", str(view)], check=True)
        res = subprocess.run([sys.executable, "-m", "app.cli", "users", "list", "--data", str(view)],
                             cwd=ROOT, capture_output=True, text=True, timeout=120,
                             env={k: v for k, v in os.environ.items() if k != "MVP_DATABASE_URL"})
    finally:
        subprocess.run(["umount", "-l", str(view)], check=False)
    err = res.stderr.strip()
    assert res.returncode == 2 and err.count("\n") == 0, (res.returncode, res.stderr)
    assert f"the data folder {view} is read-only" in err, err

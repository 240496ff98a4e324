"""Faults answered in one line (app/web/faults.py, docs/security.md "Faults"): a database damaged while
the server runs (503 with one line, one log line, every change refused afterwards), a Gradio call with an
out-of-range fn_index (400, no traceback in the log), an oversized url-encoded login form (the login page
with one line, not Starlette's JSON), and a client that goes away mid-body (nothing in the log)."""
from __future__ import annotations

import os
import socket
import sqlite3
import time

import httpx
import pytest
from fixtures_security import Server, http_login, login_form, post_login
from fixtures_web import free_port

pytestmark = [pytest.mark.slow]


@pytest.fixture(scope="module")
def fault_server(web_data, tmp_path_factory):
    """`mvp serve` on a small data directory of its own: (server, curator name, password, admin, log)."""
    from testkit.durability import prepare
    base = tmp_path_factory.mktemp("faults")
    url, users, admin = prepare(web_data[0], base / "data", "sqlite", 20, 1)
    srv = Server(base / "data", url, free_port(), base / "serve.log").start()
    name, pw = next(iter(users.items()))
    yield srv, name, pw, admin, base / "serve.log"
    srv.stop()


def _log_after(log, offset: int) -> str:
    return log.read_text()[offset:]


def test_out_of_range_gradio_event_is_one_line(fault_server):
    srv, name, pw, _, log = fault_server
    c = http_login(srv.url, name, pw)
    mark = len(log.read_text())
    for fn in (9999, -5):
        r = c.post("/curate/gradio_api/queue/join", json={"data": [], "fn_index": fn, "session_hash": "abcdef"})
        assert r.status_code == 400 and "no such event" in r.json()["error"], (r.status_code, r.text[:300])
        assert "\n" not in r.text.strip()
    assert c.post("/curate/api/load", json={}).status_code == 200
    assert "Traceback" not in _log_after(log, mark)


def test_oversized_login_forms_get_the_login_page_with_one_line(fault_server):
    srv = fault_server[0]
    for body in ("&".join(f"f{i}=x" for i in range(1001)), "username=a&password=" + "p" * 1_000_000):
        c, tok = login_form(srv.url)
        r = c.post("/login", content=f"csrf={tok}&{body}",
                   headers={"Content-Type": "application/x-www-form-urlencoded"})
        assert r.status_code == 400 and "text/html" in r.headers["content-type"], (r.status_code, r.text[:200])
        assert "The login form was refused" in r.text and '"detail"' not in r.text
    c, tok = login_form(srv.url)
    assert post_login(c, tok, fault_server[1], fault_server[2]).status_code == 303


def test_a_client_going_away_mid_body_leaves_no_traceback(fault_server):
    srv, name, pw, _, log = fault_server
    cookie = http_login(srv.url, name, pw).cookies.get("mvp_session")
    mark = len(log.read_text())
    port = int(srv.url.rsplit(":", 1)[1])
    for path in ("/curate/api/answer", "/curate/gradio_api/queue/join"):
        with socket.create_connection(("127.0.0.1", port)) as s:
            s.sendall((f"POST {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nCookie: mvp_session={cookie}\r\n"
                       "Content-Type: application/json\r\nContent-Length: 100000\r\n\r\n").encode() + b'{"state": ' + b" " * 1000)
            time.sleep(0.3)
    assert httpx.get(srv.url + "/login", timeout=30).status_code == 200
    time.sleep(1.0)                                   # the server notices the closed sockets
    after = _log_after(log, mark)
    assert "Traceback" not in after and "ClientDisconnect" not in after, after[-2000:]


def test_a_database_damaged_while_serving_is_503_in_one_line_and_takes_no_changes(web_data, tmp_path):
    from testkit.durability import prepare
    url, users, admin = prepare(web_data[0], tmp_path / "data", "sqlite", 20, 1)
    srv = Server(tmp_path / "data", url, free_port(), tmp_path / "serve.log").start()
    try:
        name, pw = next(iter(users.items()))
        c = http_login(srv.url, name, pw)
        db = tmp_path / "data" / "mvp.sqlite"
        with open(db, "r+b") as f:                    # every page but the first (the header) overwritten
            f.seek(4096)
            f.write(os.urandom(db.stat().st_size - 4096))
        con = sqlite3.connect(db)                     # another process writes the header: the server's
        con.execute("PRAGMA user_version = 7")        # cached pages are stale and it reads the damage
        con.commit()
        con.close()
        login, tok = login_form(srv.url)
        r = post_login(login, tok, *admin)
        assert r.status_code == 503 and "the database is damaged" in r.text, (r.status_code, r.text[:300])
        r = c.post("/curate/api/load", json={})
        assert r.status_code == 503 and "\n" not in r.text.strip() and "restores it" in r.json()["error"]
        r = c.post("/logout")                         # every change is refused now, before it runs
        assert r.status_code == 503
    finally:
        srv.stop()
    log = (tmp_path / "serve.log").read_text()
    assert "Traceback" not in log and log.count("the database is damaged") == 1, log[-3000:]


def test_postgres_corruption_is_recognised():
    import psycopg.errors
    from sqlalchemy.exc import DatabaseError

    from db.faults import corruption
    for err in (psycopg.errors.DataCorrupted("invalid page in block 7"), psycopg.errors.IndexCorrupted("bad index")):
        wrapped = DatabaseError("SELECT 1", {}, err)
        line = corruption(wrapped)
        assert line is not None and err.sqlstate in line and "\n" not in line
    assert corruption(DatabaseError("SELECT 1", {}, psycopg.errors.UniqueViolation("dup"))) is None


def test_a_finished_web_job_is_reaped_without_anyone_polling_it(tmp_path):
    """A job the server started (`mvp rollout` on a missing run: it fails in seconds) leaves no <defunct>
    process behind, though nobody opens its page (which used to be the only moment it was reaped)."""
    import psutil

    from app.web import jobs
    data = tmp_path / "data"
    data.mkdir()
    job = jobs.launch_cli(data, "rollout", ["rollout", "--run", "no-such-run", "--checkpoint", "base", "--set", "s",
                                            "--data", str(data), f"--db=sqlite:///{data / 'mvp.sqlite'}"],
                          user="ada", label="rollout")
    deadline = time.monotonic() + 120
    while psutil.pid_exists(job["pid"]) and time.monotonic() < deadline:
        time.sleep(0.2)
    try:
        status = psutil.Process(job["pid"]).status()
    except psutil.NoSuchProcess:
        status = "gone"
    assert status == "gone", status

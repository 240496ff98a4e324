"""Helpers and fixtures for the security suite (tests/test_security_*.py) and the access tests: log in
over plain HTTP the way a browser does (GET the form for its CSRF token, then POST), start and restart
`mvp serve` subprocesses on a data directory of their own, and a populated copy of the web test data
(more puzzles, and every kind of file a real data directory holds)."""
from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import httpx
import pytest
from testkit.store import clone_puzzles  # noqa: F401  (shared with bench/)
from testkit.web import CSRF_RE, Server, http_login, login_form, post_login  # noqa: F401  (the suite's modules import them from here)


def session_token(url: str, name: str, password: str, headers: dict | None = None) -> str:
    return http_login(url, name, password, headers).cookies.get("mvp_session")


def sqlite_copy(src: Path, dst: Path) -> None:
    """A consistent copy of a live SQLite database (the online backup API)."""
    s, d = sqlite3.connect(src), sqlite3.connect(dst)
    with d:
        s.backup(d)
    s.close()
    d.close()


def studio_with_admin(engine: str, data: Path, name: str, password: str) -> str:
    """A new studio database of `engine` ("sqlite" in `data`, or a fresh PostgreSQL database) holding one
    admin; returns its URL (drop a PostgreSQL one with testkit.store.drop_pg_database)."""
    from db.engine import open_db
    from db.users.accounts import add_user
    from testkit.store import new_database_url
    url = new_database_url(engine, data)
    Session = open_db(url, data)
    with Session() as s:
        add_user(s, name, "admin", password)
        s.commit()
    Session.kw["bind"].dispose()
    return url


@pytest.fixture(scope="session")
def sec_data(web_data, tmp_path_factory):
    """(data_dir, db_url, Session): a copy of the web test data with 400 puzzles, its own database
    (so the security suite's logins, throttle rows and verdicts never touch the shared web app) and
    every kind of file a working data directory holds."""
    from db.engine import open_db
    from db.users.accounts import add_user
    from fixtures_web import copy_web_data
    data = tmp_path_factory.mktemp("sec") / "data"
    copy_web_data(web_data, data)
    url = f"sqlite:///{data / 'mvp.sqlite'}"
    Session = open_db(url, data)
    clone_puzzles(Session, 400)
    with Session() as s:
        for i in range(20):
            add_user(s, f"cur{i:02d}", "curator", f"cur{i:02d}-password")
        add_user(s, "mallory", "curator", "mallory-password")
        s.commit()
    for rel, text in {"runs/20260101-000000-set/config.yaml": "learning_rate: 1.0e-6\n",
                      "runs/20260101-000000-set/metrics.jsonl": '{"step": 1}\n',
                      "runs/20260101-000000-set/puzzles.jsonl": '{"answer": ["A"]}\n',
                      "models/tiny/config.json": "{}", "train/active.json": "{}",
                      "exports/set1/puzzles.jsonl": '{"answer": ["B"]}\n', "configs/grpo.yaml": "beta: 0\n",
                      "cache/clips/notes.txt": "not a clip", "frames/readme.txt": "not a frame"}.items():
        (data / rel).parent.mkdir(parents=True, exist_ok=True)
        (data / rel).write_text(text)
    return data, url, Session


PASSWORD = {f"cur{i:02d}": f"cur{i:02d}-password" for i in range(20)} | {"mallory": "mallory-password"}


@pytest.fixture(scope="session")
def sec_server(sec_data, tmp_path_factory):
    """`mvp serve` on the security suite's own data directory."""
    from fixtures_web import free_port
    import os
    data, url, _ = sec_data
    # the suite's login tests speak as many client addresses through X-Forwarded-For: this server
    # trusts the test's own address as a proxy (by default nobody is trusted)
    os.environ["MVP_TRUSTED_PROXIES"] = "127.0.0.1"
    try:
        srv = Server(data, url, free_port(), data.parent / "serve.log").start()
    finally:
        del os.environ["MVP_TRUSTED_PROXIES"]
    yield srv
    srv.stop()


def puzzle_state(c: httpx.Client) -> dict:
    """Load the curate page's state for this client (leases the next puzzle to its user)."""
    r = c.post("/curate/api/load", json={})
    assert r.status_code == 200, r.text
    return r.json()["state"]


def gradio_event(c: httpx.Client, page: str, session_hash: str, fn_index: int, data: list) -> tuple[bool, object]:
    """Run one Gradio event of `page` in a session, as the browser does (queue/join, then read the
    session's event stream to its end): (success, output; on failure {"error": message})."""
    body = json.dumps({"data": data, "fn_index": fn_index, "session_hash": session_hash})   # NaN passes as NaN
    r = c.post(f"/{page}/gradio_api/queue/join", content=body, headers={"Content-Type": "application/json"})
    assert r.status_code == 200, (r.status_code, r.text[:300])
    event_id = r.json()["event_id"]
    import html
    import re
    refused = None      # a refusal is one line, outputs kept (app.web.common.keep_state): in the page's
    #                     message box (marked data-refused) or, without one, a notice; reported as a failure

    def strings(x):
        if isinstance(x, str):
            yield x
        elif isinstance(x, (list, tuple)):
            for y in x:
                yield from strings(y)
        elif isinstance(x, dict):
            for y in x.values():
                yield from strings(y)
    with c.stream("GET", f"/{page}/gradio_api/queue/data", params={"session_hash": session_hash}) as resp:
        for line in resp.iter_lines():
            if not line.startswith("data:"):
                continue
            msg = json.loads(line[5:])
            if msg.get("msg") == "log" and msg.get("level") == "warning" and msg.get("event_id") == event_id:
                refused = msg.get("log")
            if msg.get("msg") == "process_completed" and msg.get("event_id") == event_id:
                boxes = [html.unescape(m) for v in strings((msg.get("output") or {}).get("data"))
                         for m in re.findall(r"<div [^>]*data-refused>([^<]*)</div>", v)]
                if msg.get("success") and (boxes or refused):
                    return False, {"error": boxes[0] if boxes else refused}
                return bool(msg.get("success")), msg.get("output")
    raise AssertionError(f"event {fn_index} of {page} did not complete")


def gradio_page_session(c: httpx.Client, page: str) -> tuple[str, dict]:
    """Open `page` as a browser does: a new session with every load event run, and the input-less events
    chained after them (`.then`: the sections a page fills after its first view), so its dropdowns hold
    the choices the server gave this session. Returns
    (session hash, {api_name: fn_index})."""
    import secrets
    cfg = c.get(f"/{page}/config").json()
    session_hash = secrets.token_hex(6)
    apis, ran = {}, set()
    for dep in cfg["dependencies"]:          # in id order: a chained event comes after the one it follows
        if dep.get("api_name"):
            apis[dep["api_name"]] = dep["id"]
        on_load = any(t[1] == "load" for t in dep["targets"])
        chained = dep.get("trigger_after") in ran and not dep["inputs"]
        if (on_load or chained) and dep.get("backend_fn"):
            ok, out = gradio_event(c, page, session_hash, dep["id"], [])
            assert ok, out
            ran.add(dep["id"])
    return session_hash, apis

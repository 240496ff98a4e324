"""Security probe: sessions. They live in the database (hashed), so two `mvp serve` processes share
them and a restart keeps them; logout, a password change and a role change end them everywhere; logout
is a POST; the Secure flag follows --secure-cookies or the request's scheme; every answer carries the
anti-framing and no-sniff headers."""
from __future__ import annotations

import hashlib

import httpx
import pytest
from fixtures_security import PASSWORD, Server, http_login, session_token
from fixtures_web import PASSWORDS, free_port

pytestmark = [pytest.mark.browser]


def logged_in(url: str, token: str) -> bool:
    r = httpx.get(url + "/curate/", cookies={"mvp_session": token}, follow_redirects=False, timeout=60)
    assert r.status_code in (200, 303), r.status_code
    return r.status_code == 200


@pytest.fixture(scope="module")
def second_server(sec_data, sec_server):
    """A second `mvp serve` on the same database, started with --secure-cookies."""
    data, url, _ = sec_data
    srv = Server(data, url, free_port(), data.parent / "serve2.log", extra=["--secure-cookies"]).start()
    yield srv
    srv.stop()


def test_two_processes_share_sessions(sec_server, second_server, sec_data):
    """(That a restart keeps sessions is checked by the durability test, which restarts its server.)"""
    from sqlalchemy import select

    from db.models.auth import WebSession
    a, b = sec_server.url, second_server.url
    tok = session_token(a, "cur10", PASSWORD["cur10"])
    assert logged_in(a, tok) and logged_in(b, tok)           # made by A, honoured by B
    with sec_data[2]() as s:                                  # the table holds the hash, never the token
        hashes = set(s.scalars(select(WebSession.token_hash)))
    assert hashlib.sha256(tok.encode()).hexdigest() in hashes and tok not in hashes
    c = httpx.Client(base_url=b, cookies={"mvp_session": tok}, follow_redirects=False, timeout=60)
    assert c.get("/logout").status_code == 405 and logged_in(a, tok)   # no logout by GET (link, <img>)
    assert c.post("/logout").status_code == 303
    assert not logged_in(a, tok) and not logged_in(b, tok)   # logged out on B: gone on A too


def test_password_and_role_changes_end_sessions_everywhere(sec_server, second_server, sec_data):
    """On two users of its own: the other security files log in as the shared curN users, in any order,
    on the same database, so changing a shared user's password here failed them when they ran after."""
    from app.cli import main
    from db.users.accounts import add_user
    data, url, Session = sec_data
    mine = {"rot11": "rot11-password", "rot12": "rot12-password"}
    with Session() as s:
        for name, pw in mine.items():
            add_user(s, name, "curator", pw)
        s.commit()
    t1 = session_token(sec_server.url, "rot11", mine["rot11"])
    t2 = session_token(sec_server.url, "rot11", mine["rot11"])
    other = session_token(sec_server.url, "rot12", mine["rot12"])
    assert main(["users", "passwd", "rot11", "--password", "rot11-new-password", "--db", url, "--data", str(data)]) == 0
    assert not logged_in(sec_server.url, t1) and not logged_in(second_server.url, t2)
    assert logged_in(sec_server.url, other)                   # only that user's sessions
    t3 = session_token(sec_server.url, "rot11", "rot11-new-password")
    assert main(["users", "role", "rot11", "researcher", "--db", url, "--data", str(data)]) == 0
    assert not logged_in(sec_server.url, t3)
    # the admin page's endpoints end them as well (called over HTTP as the page calls them)
    from test_web_access import call_endpoint
    t4 = session_token(sec_server.url, "rot12", mine["rot12"])
    admin = session_token(sec_server.url, "ada", PASSWORDS["ada"])
    app = type("App", (), {"url": sec_server.url})
    st, body = call_endpoint(app, "admin", "set_password", ["rot12", "rot12-new-password"], admin)
    assert st == 200 and "password of rot12 changed" in body, body
    assert not logged_in(sec_server.url, other) and not logged_in(sec_server.url, t4)
    t5 = session_token(sec_server.url, "rot12", "rot12-new-password")
    st, body = call_endpoint(app, "admin", "set_role", ["rot12", "admin"], admin)
    assert st == 200 and "rot12 is now admin" in body, body
    assert not logged_in(sec_server.url, t5)


def test_expired_sessions_are_refused(sec_server, sec_data):
    from datetime import timedelta

    from sqlalchemy import update

    from db.models import utcnow
    from db.models.auth import WebSession
    tok = session_token(sec_server.url, "cur13", PASSWORD["cur13"])
    assert logged_in(sec_server.url, tok)
    with sec_data[2]() as s:
        s.execute(update(WebSession).where(WebSession.token_hash == hashlib.sha256(tok.encode()).hexdigest())
                  .values(expires_at=utcnow() - timedelta(seconds=1)))
        s.commit()
    assert not logged_in(sec_server.url, tok)


def test_secure_cookie_flag(sec_server, second_server):
    plain = _last_login_cookie(sec_server.url)
    assert "mvp_session=" in plain and "secure" not in plain.lower() and "httponly" in plain.lower()
    # behind an HTTPS proxy (X-Forwarded-Proto from a trusted proxy address): Secure by default
    proxied = _last_login_cookie(sec_server.url, {"X-Forwarded-Proto": "https"})
    assert "secure" in proxied.lower()
    forced = _last_login_cookie(second_server.url)           # mvp serve --secure-cookies, over plain HTTP
    assert "secure" in forced.lower() and "samesite=lax" in forced.lower()


def _last_login_cookie(url: str, headers: dict | None = None) -> str:
    """The session cookie's Set-Cookie line. The login-CSRF cookie is sent by hand: under
    --secure-cookies it is Secure too, and a client keeps Secure cookies off plain HTTP."""
    from fixtures_security import login_form, post_login
    c, tok = login_form(url, headers=headers)
    r = post_login(httpx.Client(base_url=url, timeout=60), tok, "cur14", PASSWORD["cur14"],
                   headers={**(headers or {}), "Cookie": f"mvp_login_csrf={tok}"})
    assert r.status_code == 303, r.text[:200]
    return "; ".join(v for k, v in r.headers.multi_items() if k == "set-cookie" and v.startswith("mvp_session="))


def test_security_headers_on_every_kind_of_answer(sec_server, sec_data):
    c = http_login(sec_server.url, "cur15", PASSWORD["cur15"])
    from db.models import Option
    with sec_data[2]() as s:
        uri = s.query(Option.uri).first()[0]
    for path in ("/login", "/curate/", f"/data/{uri}", f"/thumb/{uri}", "/static/studio.css", "/data/mvp.sqlite",
                 "/admin/", "/nothing-here"):
        r = c.get(path)
        csp = r.headers.get("content-security-policy", "")
        assert "frame-ancestors 'self'" in csp and "script-src " in csp, path     # the rest: test_security_csp.py
        assert r.headers.get("x-content-type-options") == "nosniff", path
        assert r.headers.get("x-frame-options") == "SAMEORIGIN", path

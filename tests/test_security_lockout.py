"""Login limits that an outsider cannot turn against the owner (app/web/auth.py): failed guesses count per
(name, address) and per address (an address is slowed, never locked: its owners still get in);
`mvp users unlock NAME` forgets a name's failed guesses; and X-Forwarded-For is believed only from proxies the admin names (MVP_TRUSTED_PROXIES, none by default), so
a client cannot pick the address its guesses count against. Run on SQLite and PostgreSQL."""
from __future__ import annotations

import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor

import httpx
import pytest
from fixtures_security import login_form, post_login, studio_with_admin
from fixtures_web import ROOT, Server, free_port

from app.web.auth import LOGIN_PER_ADDR, LOGIN_PER_NAME


@pytest.fixture(params=["sqlite", "postgresql"])
def plain_server(request, tmp_path):
    """`mvp serve` started as by default (no trusted proxy), with an admin "owner" and 30 curators."""
    data = tmp_path / "data"
    data.mkdir()
    url = studio_with_admin(request.param, data, "owner", "owner-password-1")
    srv = Server(data, url, free_port(), tmp_path / "serve.log").start()
    yield srv, data, url
    srv.stop()
    if request.param == "postgresql":
        from testkit.store import drop_pg_database
        drop_pg_database(url)


def _guess(url: str, name: str, password: str, xff: str | None = None) -> int:
    hdr = {"X-Forwarded-For": xff} if xff else {}
    c, tok = login_form(url, headers=hdr)
    try:
        return post_login(c, tok, name, password, headers=hdr).status_code
    finally:
        c.close()


@pytest.mark.serve
def test_unlock_and_forwarded_for_is_not_trusted_by_default(plain_server):
    srv, data, url = plain_server
    # LOGIN_PER_NAME wrong guesses at the owner, each claiming another address: all count against
    # the real one (127.0.0.1), so the owner from here is held back ...
    for i in range(LOGIN_PER_NAME):
        assert _guess(srv.url, "owner", "wrong-password", f"10.9.0.{i}") == 401
    assert _guess(srv.url, "owner", "owner-password-1", "10.9.1.1") == 429
    # ... until the admin unlocks the name
    res = subprocess.run([sys.executable, "-m", "app.cli", "users", "unlock", "owner", "--db", url, "--data", str(data)],
                         cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert res.returncode == 0 and f"{LOGIN_PER_NAME} failed logins forgotten" in res.stdout, res.stdout + res.stderr
    assert _guess(srv.url, "owner", "owner-password-1") == 303
    res = subprocess.run([sys.executable, "-m", "app.cli", "users", "unlock", "nobody", "--db", url, "--data", str(data)],
                         cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert res.returncode != 0 and len(res.stderr.strip().splitlines()) == 1 and "no such user" in res.stderr
    # the address allowance cannot be dodged with made-up X-Forwarded-For either: the owner's 5 failures and
    # 15 more fill it; the guesses after it, sent at once as a script would, are each slowed and refused
    # (at once, so the suite waits one LOGIN_SLOW_S for them, not one each)
    free = LOGIN_PER_ADDR - LOGIN_PER_NAME
    codes = [_guess(srv.url, f"name{i}", "wrong-password", f"10.8.{i}.1") for i in range(free)]
    assert codes == [401] * free, codes
    late = [(f"name{i}", "wrong-password", f"10.8.{i}.1") for i in range(free, LOGIN_PER_ADDR)]
    late += [("name99", "wrong-password", "10.7.7.7"), ("owner", "owner-password-1", "10.7.7.8")]
    with ThreadPoolExecutor(len(late)) as pool:
        codes = list(pool.map(lambda g: _guess(srv.url, *g), late))
    # slowed, not locked: the owner's right password from the same (shared, local) address gets in
    assert codes == [429] * (len(late) - 1) + [303], codes
    assert httpx.get(srv.url + "/login", timeout=30).status_code == 200

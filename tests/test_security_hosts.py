"""Host names and the cross-site check (app/web/settings.py, app/web/guards.py): a request under a host
name the server was not told to answer to gets 400 (DNS rebinding), and a cross-site POST cannot pass
by naming its own site in both Origin and Host. The allowed names and trusted proxies are one validated
settings model; a bad value stops `mvp serve` with one line."""
from __future__ import annotations

import subprocess
import sys

import httpx
import pytest
from fixtures_web import ROOT
from starlette.requests import Request

from app.web.guards import cross_site
from app.web.settings import ServeSettings

pytestmark = [pytest.mark.browser]


def test_unknown_host_names_are_refused_and_origin_must_be_allowed(sec_server):
    port = sec_server.url.rsplit(":", 1)[1]
    with httpx.Client(base_url=sec_server.url, timeout=30) as c:
        assert c.get("/login").status_code == 200
        assert c.get("/login", headers={"Host": f"localhost:{port}"}).status_code == 200
        r = c.get("/login", headers={"Host": "evil.example"})
        assert r.status_code == 400 and len(r.text.strip().splitlines()) == 1, (r.status_code, r.text)
        # a rebinding page posts with its own name in both headers: refused before any route
        r = c.post("/login", headers={"Host": "evil.example", "Origin": "http://evil.example"},
                   data={"username": "cur03", "password": "x", "csrf": "x"})
        assert r.status_code == 400, r.status_code
        r = c.post("/logout", headers={"Origin": "http://evil.example"})
        assert r.status_code == 403 and "cross-site" in r.text


def _request(host: str, origin: str) -> Request:
    return Request({"type": "http", "method": "POST", "path": "/logout", "query_string": b"",
                    "headers": [(b"host", host.encode()), (b"origin", origin.encode())]})


def test_cross_site_check_needs_an_allowed_host_not_just_a_matching_one():
    behind_nginx = ServeSettings.from_env("127.0.0.1", {"MVP_ALLOWED_HOSTS": "studio.example.org",
                                                         "MVP_TRUSTED_PROXIES": "127.0.0.1"})
    assert behind_nginx.allowed_hosts == ("studio.example.org",) and behind_nginx.trusted_proxies == ("127.0.0.1",)
    assert not cross_site(_request("studio.example.org", "https://studio.example.org"), behind_nginx)
    assert cross_site(_request("evil.example", "http://evil.example"), behind_nginx)
    local = ServeSettings()
    assert not cross_site(_request("127.0.0.1:7860", "http://127.0.0.1:7860"), local)
    assert not cross_site(_request("[::1]:7860", "http://[::1]:7860"), local)
    assert cross_site(_request("evil.example", "http://evil.example"), local)
    assert cross_site(_request("127.0.0.1:7860", "http://127.0.0.1:9999"), local)


@pytest.mark.parametrize("env,line", [({"MVP_ALLOWED_HOSTS": "http://studio.example.org"}, "MVP_ALLOWED_HOSTS"),
                                      ({"MVP_TRUSTED_PROXIES": "nginx"}, "MVP_TRUSTED_PROXIES")])
def test_bad_network_settings_stop_serve_with_one_line(tmp_path, env, line):
    import os
    from fixtures_web import free_port
    res = subprocess.run([sys.executable, "-m", "app.cli", "serve", "--data", str(tmp_path), "--port", str(free_port())],
                         cwd=ROOT, capture_output=True, text=True, timeout=120, env={**os.environ, **env})
    assert res.returncode != 0 and len(res.stderr.strip().splitlines()) == 1 and line in res.stderr, res.stderr

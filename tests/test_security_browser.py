"""Security probe in a real browser (Chromium): another origin on a second port of the same host -- the
same *site*, so SameSite=Lax cookies are sent -- cannot log the victim in as the attacker (login CSRF,
even with a CSRF cookie it planted itself), cannot log them out, cannot read answers or post verdicts
with their cookies, and cannot frame the app."""
from __future__ import annotations

import http.server
import threading

import pytest
from fixtures_security import PASSWORD
from fixtures_web import PASSWORDS, free_port, login

pytestmark = [pytest.mark.browser]
PLANTED = "planted-by-the-attacker-0123456789"


def attacker_pages(app: str) -> dict[str, tuple[str, list[tuple[str, str]]]]:
    """path -> (HTML, extra headers) served by the attacker's origin."""
    submit = "<script>document.forms[0].submit()</script>"
    return {
        "/login-csrf": (f"""<form method="post" action="{app}/login">
            <input name="username" value="mallory"><input name="password" value="{PASSWORD['mallory']}">
            <input name="csrf" value="{PLANTED}"><input name="next" value="/curate/"></form>{submit}""",
                        # cookies ignore ports: a page on 127.0.0.1:other can set one for the app's /login
                        [("Set-Cookie", f"mvp_login_csrf={PLANTED}; Path=/login; SameSite=Lax")]),
        "/logout": (f'<form method="post" action="{app}/logout"></form>{submit}', []),
        "/fetch": (f"""<script>
            window.results = {{}};
            const log = (k, p) => p.then(r => r.text().then(t => window.results[k] = "read " + r.status + " " + t.slice(0, 80)))
                                   .catch(e => window.results[k] = "blocked " + e.name);
            Promise.all([
              log("config", fetch("{app}/admin/config", {{credentials: "include"}})),
              log("json", fetch("{app}/curate/api/load", {{method: "POST", credentials: "include",
                  headers: {{"Content-Type": "application/json"}}, body: "{{}}"}})),
              log("plain", fetch("{app}/curate/api/verdict", {{method: "POST", credentials: "include",
                  headers: {{"Content-Type": "text/plain"}}, body: '{{"verdict": "accept"}}'}})),
              log("own", fetch("/own")),
            ]).then(() => window.done = true);
            </script>""", []),
        "/own": ("attacker's own page", []),
        "/frame": (f'<iframe id="victim" src="{app}/login" width="600" height="400"></iframe>', []),
    }


@pytest.fixture(scope="module")
def attacker(sec_server):
    pages = attacker_pages(sec_server.url)

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            body, headers = pages.get(self.path, ("no such page", []))
            self.send_response(200 if self.path in pages else 404)
            self.send_header("Content-Type", "text/html")
            for k, v in headers:
                self.send_header(k, v)
            self.end_headers()
            self.wfile.write(body.encode())

        def log_message(self, *a):
            pass
    srv = http.server.ThreadingHTTPServer(("127.0.0.1", free_port()), Handler)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{srv.server_address[1]}"
    srv.shutdown()


def session_cookie(ctx, url: str) -> str | None:
    return next((c["value"] for c in ctx.cookies(url) if c["name"] == "mvp_session"), None)


def test_another_origin_cannot_act_with_the_victims_cookies(sec_server, sec_data, attacker, browser):
    from sqlalchemy import func, select

    from db.models.curation import VerdictEvent
    _, _, Session = sec_data
    ctx, page = login(browser, sec_server, "ada", PASSWORDS["ada"], path="/curate/")
    page.wait_for_selector("#mvp-puzzle", timeout=60000)
    mine = session_cookie(ctx, sec_server.url)
    assert mine
    with Session() as s:
        n_events = s.scalar(select(func.count()).select_from(VerdictEvent))

    # 1. login CSRF: the auto-submitted form is refused, the victim stays themselves
    with page.expect_navigation(url=f"{sec_server.url}/login"):
        page.goto(attacker + "/login-csrf")
    assert "cross-site request" in page.content()
    assert session_cookie(ctx, sec_server.url) == mine

    # 2. logout CSRF: refused, still logged in
    with page.expect_navigation(url=f"{sec_server.url}/logout"):
        page.goto(attacker + "/logout")
    assert session_cookie(ctx, sec_server.url) == mine
    assert page.goto(sec_server.url + "/admin/").status == 200

    # 3. reading answers and posting verdicts from script: blocked or refused, nothing written
    page.goto(attacker + "/fetch")
    page.wait_for_function("() => window.done === true", timeout=30000)
    res = page.evaluate("() => window.results")
    assert res["own"].startswith("read 200"), res                 # the page's script did run
    assert res["config"].startswith("blocked") and res["json"].startswith("blocked"), res
    assert res["plain"].startswith("blocked"), res                # opaque: no CORS grant to read it
    with Session() as s:
        assert s.scalar(select(func.count()).select_from(VerdictEvent)) == n_events

    # 4. framing: frame-ancestors 'self' keeps the login page out of another origin's iframe
    page.goto(attacker + "/frame")
    page.wait_for_timeout(1500)
    child = next(f for f in page.frames if f != page.main_frame)
    assert not child.url.startswith(sec_server.url) or child.locator("#login-user").count() == 0
    ctx.close()


def test_the_same_forms_from_the_app_itself_work(sec_server, browser):
    """The control: logging in and out from the app's own pages works in the same browser."""
    ctx, page = login(browser, sec_server, "cur07", PASSWORD["cur07"], path="/curate/")
    page.wait_for_selector("#mvp-puzzle", timeout=60000)
    assert session_cookie(ctx, sec_server.url)
    page.click("#nav-logout")
    page.wait_for_url(f"{sec_server.url}/login")
    assert session_cookie(ctx, sec_server.url) is None
    ctx.close()

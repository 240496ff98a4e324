"""Access control over real HTTP: login required, roles per page and per endpoint (called directly,
not through the page), only files under the data directory. The attacker's probes (media-only files,
sessions, throttling, CSRF, bounds) are the security suite, tests/test_security_*.py."""
from __future__ import annotations

import http.client
import json
from urllib.parse import urlparse

import pytest
from fixtures_web import PASSWORDS

pytestmark = [pytest.mark.browser]


def raw_get(app, path: str, cookie: str | None = None) -> tuple[int, bytes]:
    """GET with the path sent exactly as given (no client-side normalisation of '..')."""
    u = urlparse(app.url)
    c = http.client.HTTPConnection(u.hostname, u.port, timeout=30)
    c.putrequest("GET", path, skip_accept_encoding=True)
    if cookie:
        c.putheader("Cookie", f"mvp_session={cookie}")
    c.endheaders()
    r = c.getresponse()
    body = r.read()
    c.close()
    return r.status, body


def raw_post(app, path: str, payload: dict, cookie: str | None = None) -> tuple[int, bytes]:
    u = urlparse(app.url)
    c = http.client.HTTPConnection(u.hostname, u.port, timeout=30)
    headers = {"Content-Type": "application/json"}
    if cookie:
        headers["Cookie"] = f"mvp_session={cookie}"
    c.request("POST", path, body=json.dumps(payload), headers=headers)
    r = c.getresponse()
    body = r.read()
    c.close()
    return r.status, body


def session_cookie(app, name: str, password: str | None = None) -> str | None:
    from fixtures_security import session_token
    return session_token(app.url, name, password or PASSWORDS[name])


def a_frame_uri(app) -> str:
    from db.models import Option
    with app.Session() as s:
        return s.query(Option.uri).first()[0]


def call_endpoint(app, page: str, api: str, data: list, cookie: str | None) -> tuple[int, str]:
    """Call a Gradio event directly (POST /<page>/gradio_api/call/<api>, then read its result)."""
    st, body = raw_post(app, f"/{page}/gradio_api/call/{api}", {"data": data}, cookie)
    if st != 200:
        return st, body.decode(errors="replace")
    event = json.loads(body)["event_id"]
    st, body = raw_get(app, f"/{page}/gradio_api/call/{api}/{event}", cookie)
    return st, body.decode(errors="replace")


def test_unauthenticated_requests_are_refused(web_app):
    uri = a_frame_uri(web_app)
    assert raw_get(web_app, f"/data/{uri}")[0] == 401
    assert raw_get(web_app, f"/thumb/{uri}")[0] == 401
    st, _ = raw_get(web_app, "/curate/")
    assert st == 303                                           # to the login page
    for page in ("curate", "rollouts", "stats", "admin", "train"):
        assert raw_post(web_app, f"/{page}/gradio_api/queue/join", {"data": [], "fn_index": 0})[0] == 401
        assert raw_get(web_app, f"/{page}/config")[0] == 401
    cookie = session_cookie(web_app, "cora")
    st, body = raw_get(web_app, f"/data/{uri}", cookie)
    assert st == 200 and body[:2] == b"\xff\xd8"                # a JPEG, once logged in
    assert raw_get(web_app, f"/thumb/{uri}", cookie)[0] == 200


def test_only_files_under_the_data_dir_are_served(web_app, tmp_path):
    cookie = session_cookie(web_app, "ada")
    secret = web_app.outside                                   # <tmp>/secret.txt, beside data/
    link = web_app.data_dir / "frames" / "evil.jpg"
    link.symlink_to(secret)
    dlink = web_app.data_dir / "outside_dir"
    dlink.symlink_to(secret.parent, target_is_directory=True)
    inside = web_app.data_dir / "frames" / "ok_link.jpg"
    inside.symlink_to(web_app.data_dir / a_frame_uri(web_app))  # a symlink staying inside is fine
    try:
        attempts = ["/data/../secret.txt", "/data/%2e%2e/secret.txt", "/data/frames/../../secret.txt",
                    "/data/..%2Fsecret.txt", "/data//etc/passwd", "/data/%2Fetc%2Fpasswd",
                    f"/data/{secret}", "/data/frames/evil.jpg", "/data/outside_dir/secret.txt",
                    "/thumb/../secret.txt", "/thumb/frames/evil.jpg", "/thumb/%2Fetc%2Fpasswd",
                    "/data/C:%5Cwindows", "/curate/gradio_api/file=/etc/passwd",
                    f"/curate/gradio_api/file={secret}", "/static/../app/auth.py",
                    "/static/%2e%2e/app/auth.py"]
        for path in attempts:
            st, body = raw_get(web_app, path, cookie)
            assert st in (400, 401, 403, 404, 405), (path, st)
            assert b"TOP SECRET" not in body and b"root:" not in body and b"PAGE_ROLES" not in body, path
        assert raw_get(web_app, "/data/frames/ok_link.jpg", cookie)[0] == 200
        assert raw_get(web_app, "/static/pages/curate/hotkeys.js", cookie)[0] == 200
        assert raw_get(web_app, "/static/pages/curate/page.py", cookie)[0] == 404   # only listed scripts
    finally:
        link.unlink()
        dlink.unlink()
        inside.unlink()


def test_curator_is_refused_rollouts_stats_and_admin(web_app, browser):
    from db.users.accounts import get_user
    cookie = session_cookie(web_app, "cora")
    for page in ("rollouts", "stats", "admin", "train"):
        assert raw_get(web_app, f"/{page}/", cookie)[0] == 403
        assert raw_get(web_app, f"/{page}/config", cookie)[0] == 403
    # the endpoints themselves, called directly
    st, _ = call_endpoint(web_app, "admin", "add_user", ["mallory", "admin", "mallory-pass"], cookie)
    assert st == 403
    st, _ = call_endpoint(web_app, "rollouts", "group", ["web-test-run", "base", "", "x"], cookie)
    assert st == 403
    assert raw_post(web_app, "/admin/gradio_api/queue/join",
                    {"data": ["mallory", "admin", "x"], "fn_index": 1, "session_hash": "abc"}, cookie)[0] == 403
    with web_app.Session() as s:
        assert get_user(s, "mallory") is None
    # the same direct call works for an admin, so the refusal above is the role check, not a bad call
    admin = session_cookie(web_app, "ada")
    st, body = call_endpoint(web_app, "admin", "add_user", ["direct-user", "curator", "direct-pass-1"], admin)
    assert st == 200 and "added direct-user" in body, body
    assert session_cookie(web_app, "direct-user", "direct-pass-1")

    # the page itself: a curator's nav has no rollouts/admin links, and the pages answer 403
    from fixtures_web import login, shot
    ctx, page = login(browser, web_app, "cora", path="/curate/")
    page.wait_for_selector("#mvp-puzzle", timeout=30000)
    assert page.locator("#nav-rollouts").count() == 0 and page.locator("#nav-admin").count() == 0
    resp = page.goto(web_app.url + "/admin/")
    assert resp.status == 403
    shot(page, "curator_refused_admin")
    ctx.close()


def test_curate_api_checks_session_and_input(web_app):
    """The curate page's JSON API (app/web/pages/curate/api.py): no session, no access; bad input gets one
    clear line and writes nothing."""
    from sqlalchemy import func, select

    from db.models import Puzzle
    from db.models.curation import VerdictEvent
    with web_app.Session() as s:
        pid = s.scalars(select(Puzzle.id).order_by(Puzzle.id)).first()
        n_events = s.scalar(select(func.count()).select_from(VerdictEvent))
    state = {"pid": pid, "back": [], "fwd": [], "reveal": False}
    st, body = raw_post(web_app, "/curate/api/verdict", {"state": state, "verdict": "accept"})
    assert st == 401 and json.loads(body) == {"error": "not logged in"}
    cookie = session_cookie(web_app, "rhea")
    # a deep link does not lease the puzzle, so this read leaves the queue as it was
    st, body = raw_post(web_app, "/curate/api/load", {"puzzle": pid}, cookie)
    got = json.loads(body)
    assert st == 200 and got["state"]["pid"] == pid and f'data-puzzle-id="{pid}"' in got["html"]
    bad = [("verdict", {"state": state, "verdict": "maybe"}, "verdict must be one of accept, reject, skip"),
           ("verdict", {"state": {**state, "pid": "no-such"}, "verdict": "accept"}, "no puzzle 'no-such'"),
           ("verdict", {"state": {**state, "back": "x"}, "verdict": "accept"}, "state.back must be a list"),
           ("verdict", {"state": state, "verdict": "accept", "note": 5}, "note must be text"),
           ("toggle", {"state": state, "index": 1, "reason": "dunno"}, "reason must be one of"),
           ("toggle", {"state": state, "index": 12, "reason": "other"}, "index must be an option number"),
           ("move", {"state": state, "step": 2}, "step must be -1 or 1")]
    for action, payload, err in bad:
        st, body = raw_post(web_app, f"/curate/api/{action}", payload, cookie)
        msg = json.loads(body)["error"]
        assert st == 400 and err in msg and "\n" not in msg, (action, payload, msg)
    u = urlparse(web_app.url)
    c = http.client.HTTPConnection(u.hostname, u.port, timeout=30)
    c.request("POST", "/curate/api/verdict", body="verdict=accept",
              headers={"Content-Type": "application/x-www-form-urlencoded", "Cookie": f"mvp_session={cookie}"})
    r = c.getresponse()
    assert r.status == 415 and b"application/json" in r.read()
    c.close()
    with web_app.Session() as s:
        assert s.scalar(select(func.count()).select_from(VerdictEvent)) == n_events


def test_rollouts_view_api_checks_session_role_and_input(web_app):
    """The Rollouts page's view API (app/web/pages/rollouts/api.py): researchers only; the default view is
    the page's first puzzle; a version that has no answers or an overlong parameter is one line."""
    from urllib.parse import quote
    st, body = raw_get(web_app, "/rollouts/api/view")
    assert st == 401
    st, _ = raw_get(web_app, "/rollouts/api/view", session_cookie(web_app, "cora"))
    assert st in (401, 403)                                       # a curator may not open Rollouts
    cookie = session_cookie(web_app, "rhea")
    st, body = raw_get(web_app, "/rollouts/api/view", cookie)
    got = json.loads(body)
    assert st == 200 and got["left"] and got["puzzle"] and len(got["html"]) == 4
    assert f'data-puzzle-id="{got["puzzle"]}"' in got["html"][0] and "mvp-answer-row" in got["html"][1]
    st, body = raw_get(web_app, f"/rollouts/api/view?left={quote(got['left'])}&puzzle={got['puzzle']}", cookie)
    assert st == 200 and json.loads(body)["html"][:2] == got["html"][:2]
    for query, err in ((f"left=x%7C12&puzzle={got['puzzle']}", "left is not a model version"),
                       (f"left={quote(got['left'])}&right=nope%7Cbase", "right is not a model version"),
                       ("left=" + "a" * 400, "longer than 300 characters"),
                       (f"left={quote(got['left'])}&puzzle=a%00b", "puzzle holds a NUL")):
        st, body = raw_get(web_app, "/rollouts/api/view?" + query, cookie)
        msg = json.loads(body)["error"]
        assert st == 400 and err in msg and "\n" not in msg, (query, msg)


def test_server_side_role_check_in_handlers(web_app):
    """Second line of defence: the handlers check the role themselves (app.web.common.guard)."""
    from app.web.auth import Auth, Forbidden
    auth = Auth(web_app.Session)
    assert auth.require("rhea", "rollouts") == web_app.user_id("rhea")
    for page in ("rollouts", "stats", "admin", "train"):
        with pytest.raises(Forbidden):
            auth.require("cora", page)
    with pytest.raises(Forbidden):
        auth.require("rhea", "admin")
    with pytest.raises(Forbidden):
        auth.require(None, "curate")

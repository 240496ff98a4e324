"""An ended session (expired, or revoked by an admin) is never a dead end: a page answers with the login
page and comes back to the same place after it, an API call's 401 is turned into that redirect by
the page script (static/session.js), and a curator's verdict given meanwhile is kept (localStorage)
and sent after the login. The Train page goes to the login page instead of notices on every panel."""
from __future__ import annotations

import uuid

import pytest
from playwright.sync_api import Error as PlaywrightError
from fixtures_web import shot

pytestmark = [pytest.mark.browser]
PHONE = {"width": 390, "height": 844}
PW = "a-long-enough-password"


def _user(app, role: str) -> tuple[str, int]:
    from db.users.accounts import add_user
    name = f"exp{role[:3]}{uuid.uuid4().hex[:6]}"
    with app.Session() as s:
        u, _ = add_user(s, name, role, PW)
        s.commit()
        return name, u.id


def _end_sessions(app, uid: int) -> None:
    from db.users.accounts import revoke_sessions
    with app.Session() as s:
        revoke_sessions(s, uid)
        s.commit()


def _fill_login(page, name: str) -> None:
    page.fill("#login-user", name)
    page.fill("#login-password", PW)
    page.click("#login-submit")


def _at_login_for(page, path: str) -> None:
    page.wait_for_url(lambda u: "/login?next=" in u, timeout=30_000)
    page.wait_for_selector("#login-user")
    assert page.input_value("input[name=next]") == path


def test_curator_verdict_given_after_expiry_is_kept_and_sent_after_login(browser, web_app, fresh_curator):
    from db.models.curation import PuzzleVerdict
    name, password = fresh_curator
    with web_app.Session() as s:
        from db.users.accounts import get_user, set_password
        uid = get_user(s, name).id
        set_password(s, name, PW)          # _fill_login's password
        s.commit()
    ctx = browser.new_context(viewport=PHONE, has_touch=True, is_mobile=True)
    page = ctx.new_page()
    try:
        page.goto(web_app.url + "/curate/")
        _at_login_for(page, "/curate/")
        _fill_login(page, name)
        page.wait_for_selector("#mvp-puzzle[data-puzzle-id]")
        page.wait_for_selector(".mvp-user[data-user]")
        pid = page.get_attribute("#mvp-puzzle", "data-puzzle-id")
        _end_sessions(web_app, uid)                                  # the session ends meanwhile
        page.keyboard.press("s")                                      # the curator's verdict: skip
        _at_login_for(page, "/curate/")
        kept = page.evaluate("localStorage.getItem('mvp-curate-pending')")
        assert kept and pid in kept
        shot(page, "web_expired_curate_login_phone")
        with web_app.Session() as s:
            assert s.query(PuzzleVerdict).filter_by(user_id=uid, puzzle_id=pid).count() == 0
        _fill_login(page, name)
        page.wait_for_function("(document.getElementById('mvp-msg-box') || {}).innerText?.includes('given before the login')")
        assert "is saved" in page.inner_text("#mvp-msg-box")
        assert page.evaluate("localStorage.getItem('mvp-curate-pending')") is None
        with web_app.Session() as s:
            v = s.query(PuzzleVerdict).filter_by(user_id=uid, puzzle_id=pid).one()
            assert v.verdict == "skip"
        assert page.get_attribute("#mvp-puzzle", "data-puzzle-id") != pid     # on to the next puzzle
        shot(page, "web_expired_curate_after_login_phone")
    finally:
        ctx.close()


@pytest.mark.parametrize("viewport", [{"width": 1280, "height": 900}, PHONE], ids=["1280", "390"])
def test_distractor_verdict_given_after_expiry_is_kept_and_sent_after_login(browser, web_app, fresh_curator, viewport):
    """A tap on a distractor's Reject while the session has ended (an admin changed the password) is
    kept like a puzzle verdict: after the login it is stored and the page says so."""
    from curate_steps import keys_for, record
    from db.models.curation import OptionVerdict
    name, _ = fresh_curator
    with web_app.Session() as s:
        from db.users.accounts import get_user, set_password
        uid = get_user(s, name).id
        set_password(s, name, PW)
        s.commit()
    phone = viewport is PHONE
    ctx = browser.new_context(viewport=viewport, has_touch=phone, is_mobile=phone)
    page = ctx.new_page()
    try:
        page.goto(web_app.url + "/curate/")
        _fill_login(page, name)
        page.wait_for_selector("#mvp-puzzle[data-puzzle-id][data-phase=answer]")
        page.wait_for_selector(".mvp-user[data-user]")
        pid = page.get_attribute("#mvp-puzzle", "data-puzzle-id")
        rec = record(web_app, pid)
        for d in keys_for(rec, True):                              # solve first, then vet
            page.keyboard.press(d)
        page.keyboard.press("Enter")
        page.wait_for_selector(f"#mvp-puzzle[data-puzzle-id='{pid}'][data-phase=vet]")
        label = next(o["label"] for o in rec["options"] if o["kind"] != "target")
        reject = f".mvp-opt[data-label='{label}'] .mvp-card-reject"
        _end_sessions(web_app, uid)                                 # the session ends meanwhile
        (page.tap if phone else page.click)(reject)
        _at_login_for(page, "/curate/")
        kept = page.evaluate("localStorage.getItem('mvp-curate-pending')")
        assert kept and pid in kept and '"toggle"' in kept
        with web_app.Session() as s:
            assert s.query(OptionVerdict).filter_by(user_id=uid, puzzle_id=pid, label=label).count() == 0
        _fill_login(page, name)
        page.wait_for_function("(document.getElementById('mvp-msg-box') || {}).innerText?.includes('given before the login')")
        assert f"reject option {label} on {pid}" in page.inner_text("#mvp-msg-box")
        assert "is saved" in page.inner_text("#mvp-msg-box")
        assert page.evaluate("localStorage.getItem('mvp-curate-pending')") is None
        page.wait_for_selector(f"#mvp-puzzle[data-puzzle-id='{pid}'] .mvp-opt[data-label='{label}'][data-state=reject]")
        with web_app.Session() as s:
            assert s.query(OptionVerdict).filter_by(user_id=uid, puzzle_id=pid, label=label).one().verdict == "reject"
        shot(page, f"web_expired_distractor_after_login_{viewport['width']}")
    finally:
        ctx.close()


def test_kept_verdict_is_not_sent_for_another_user(browser, web_app, fresh_curator):
    from db.models.curation import PuzzleVerdict
    other, other_id = _user(web_app, "curator")
    ctx = browser.new_context(viewport={"width": 1400, "height": 1000})
    page = ctx.new_page()
    try:
        page.goto(web_app.url + "/login")
        page.evaluate("""(p) => localStorage.setItem('mvp-curate-pending', JSON.stringify(p))""",
                      {"user": "somebody-else", "pid": "x", "body": {"state": None, "verdict": "skip", "note": ""}})
        page.goto(web_app.url + "/curate/")
        _fill_login(page, other)
        page.wait_for_selector("#mvp-puzzle[data-puzzle-id]")
        page.wait_for_selector(".mvp-user[data-user]")
        assert page.evaluate("localStorage.getItem('mvp-curate-pending')")        # left for its owner
        with web_app.Session() as s:
            assert s.query(PuzzleVerdict).filter_by(user_id=other_id).count() == 0
    finally:
        ctx.close()


@pytest.mark.parametrize("viewport", [{"width": 1400, "height": 1000}, PHONE])
def test_train_page_goes_to_login_and_back(browser, web_app, viewport):
    name, uid = _user(web_app, "researcher")
    ctx = browser.new_context(viewport=viewport)
    page = ctx.new_page()
    try:
        page.goto(web_app.url + "/train/")
        _fill_login(page, name)
        page.wait_for_selector("#train-launch:not([disabled])")
        _end_sessions(web_app, uid)
        try:                                   # any event of the page (the live view's timer may come first)
            page.click("#train-runs-refresh", timeout=5_000)
        except PlaywrightError:
            pass
        _at_login_for(page, "/train/")
        assert page.locator(".toast-body").count() == 0
        _fill_login(page, name)
        page.wait_for_url(lambda u: u.endswith("/train/"))
        page.wait_for_selector("#train-launch:not([disabled])")
        assert page.locator(".toast-body").count() == 0
        assert page.get_by_text("Error", exact=True).count() == 0
    finally:
        ctx.close()


def test_page_and_api_answers_of_an_ended_session(web_app):
    """Over plain HTTP: a page GET redirects to the login with the same place (query included); an API
    call answers 401 with a JSON line, which the page script turns into that redirect."""
    import httpx
    from testkit.web import http_login
    name, uid = _user(web_app, "curator")
    c = http_login(web_app.url, name, PW)
    _end_sessions(web_app, uid)
    r = c.get("/curate/?video=abc")
    assert r.status_code == 303 and r.headers["location"].startswith("/login?next=")
    assert httpx.URL(r.headers["location"]).params["next"] == "/curate/?video=abc"
    r = c.post("/curate/api/verdict", json={"state": None, "verdict": "skip"})
    assert r.status_code == 401 and r.json() == {"error": "not logged in"}
    r = c.get("/login", params={"next": "/curate/?video=abc"})
    assert 'name="next" value="/curate/?video=abc"' in r.text

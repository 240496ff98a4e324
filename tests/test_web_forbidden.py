"""A page the role may not open answers a styled 403 page (navigation to the pages the role may open,
a way back), at desktop and phone width; the page's endpoints keep answering one-line JSON."""
from __future__ import annotations

import uuid
from pathlib import Path

import pytest
from fixtures_web import browser_login

SHOTS = Path("/tmp/shots")


def _curator(web_app) -> tuple[str, str]:
    from db.users.accounts import add_user
    name, pw = f"cur-{uuid.uuid4().hex[:8]}", "curator-pass-1"
    with web_app.Session() as s:
        add_user(s, name, "curator", pw)
        s.commit()
    return name, pw


@pytest.mark.browser
@pytest.mark.parametrize("width", [1400, 390])
def test_forbidden_page_has_navigation_and_a_way_back(web_app, browser, width):
    name, pw = _curator(web_app)
    ctx, page = browser_login(browser, web_app.url, name, pw, "/curate/")
    page.set_viewport_size({"width": width, "height": 900})
    page.wait_for_selector("#mvp-puzzle", timeout=30000)
    resp = page.goto(web_app.url + "/stats/")
    assert resp.status == 403 and resp.headers["content-type"].startswith("text/html")
    assert page.title() == "MVP Studio · Not for your role"
    why = page.locator("#forbidden-why").inner_text()
    assert f"{name} (curator) may not open the Stats page" in why and "admin and researcher" in why
    assert page.locator("#nav-curate").is_visible() and page.locator("#nav-stats").count() == 0
    assert page.locator("#nav-logout").is_visible()
    # styled: the shared stylesheet is applied (the box has the page's rounded card), and it fits the width
    assert page.eval_on_selector("#mvp-forbidden", "e => getComputedStyle(e).borderRadius") == "10px"
    assert page.evaluate("document.documentElement.scrollWidth") <= width
    SHOTS.mkdir(exist_ok=True)
    page.screenshot(path=str(SHOTS / f"forbidden_{width}.png"), full_page=True)
    page.click("#forbidden-back")
    page.wait_for_selector("#mvp-puzzle", timeout=30000)
    assert page.url.rstrip("/").endswith("/curate")
    ctx.close()


def test_forbidden_api_stays_json(web_app):
    """Not a page (a Gradio route of the page): the one-line JSON error, no HTML."""
    from testkit.web import http_login
    name, pw = _curator(web_app)
    c = http_login(web_app.url, name, pw)
    r = c.get("/stats/config")
    assert r.status_code == 403 and r.json() == {"error": f"forbidden: {name} may not use the stats page"}
    r = c.post("/stats/gradio_api/queue/join", json={})
    assert r.status_code == 403 and "forbidden" in r.json()["error"]
    c.close()


@pytest.mark.browser
@pytest.mark.parametrize("width", [1280, 390])
def test_unknown_address_answers_a_page_with_a_way_back(web_app, browser, width):
    """An unknown address is a styled 404 page in the browser, not raw JSON; a script still gets JSON."""
    import httpx
    name, pw = _curator(web_app)
    ctx, page = browser_login(browser, web_app.url, name, pw, "/curate/")
    try:
        page.set_viewport_size({"width": width, "height": 900})
        resp = page.goto(web_app.url + "/no-such-page/here")
        assert resp.status == 404
        assert "Not Found" not in page.inner_text("body") and "detail" not in page.inner_text("body")
        assert "/no-such-page/here" in page.inner_text("#not-found-why")
        page.click("#not-found-back")
        page.wait_for_selector("#mvp-puzzle", timeout=30000)          # back in the studio, on the curator's page
    finally:
        ctx.close()
    r = httpx.get(web_app.url + "/no-such-page/here", headers={"Accept": "application/json"})
    assert r.status_code == 404 and r.headers["content-type"].startswith("application/json")

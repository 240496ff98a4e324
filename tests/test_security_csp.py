"""Content-Security-Policy with `script-src` (app/web/csp.py, docs/security.md): every page of every role
loads in Chromium with no CSP violation (securitypolicyviolation events and console reports) and
still works: its load event filled the navigation bar, a click does what it should (the curate page's
puzzle drawn by its script and its `js=` help toggle, a Gradio event's message on the Admin and Data
pages, a nav link to the next page); a script injected into a page's HTML would be blocked (no
'unsafe-inline'; each answer has a fresh nonce), and the app's own pages allow only `script-src 'self'`."""
from __future__ import annotations

import re

import httpx
import pytest
from fixtures_web import login

from app.web.auth import PAGE_ROLES
from app.web.csp import OWN_PAGES

pytestmark = [pytest.mark.browser]

WATCH = """
window.__csp = [];
document.addEventListener("securitypolicyviolation",
  e => window.__csp.push(e.violatedDirective + " " + (e.blockedURI || "inline") + " " + (e.sample || "")));
"""


def _pages_of(role: str, pages) -> list[str]:
    return [p for p in pages if role in PAGE_ROLES[p]]


def _works(page, name: str) -> None:
    """One check per page that its scripts and its Gradio events run under the policy."""
    if name == "curate":
        page.wait_for_selector("#mvp-puzzle", timeout=30000)          # drawn by curate.js (started by js=)
        page.click("#btn-help")                                       # a js= event
        page.wait_for_selector("#mvp-help:not([hidden])", timeout=10000)
    elif name in ("admin", "datasets"):
        box = {"admin": "admin", "datasets": "data"}[name]
        page.click(f"#{box}-add")                                     # an empty name / folder: one line back
        page.wait_for_function(f"document.querySelector('#{box}-msg')?.innerText.trim().length > 0",
                               timeout=20000)


@pytest.mark.parametrize("user", ["cora", "rhea", "ada"])
def test_every_page_passes_its_policy_and_works(web_app, browser, user):
    from fixtures_web import ROLES
    with httpx.Client(base_url=web_app.url) as c:
        mounted = [p for p in PAGE_ROLES if c.get(f"/{p}/", follow_redirects=False).status_code != 404]
    names = _pages_of(ROLES[user], mounted)
    assert names, user
    # a user of its own with the role: what this walk does on the curate page (a lease, a click) must
    # not change the shared app for the tests of the same users that come after it
    import uuid

    from db.users.accounts import add_user
    own, password = f"csp-{user}-{uuid.uuid4().hex[:6]}", "a-long-password-for-csp"
    with web_app.Session() as s:
        add_user(s, own, ROLES[user], password)
        s.commit()
    ctx, page = login(browser, web_app, own, password, path="/login")
    ctx.add_init_script(WATCH)
    reports, policies = [], {}
    page.on("console", lambda m: reports.append(m.text) if "Content Security Policy" in m.text else None)
    page.on("response", lambda r: policies.setdefault(r.url, r.headers.get("content-security-policy", ""))
            if r.request.resource_type == "document" else None)
    try:
        page.goto(f"{web_app.url}/{names[0]}/")
        for i, name in enumerate(names):          # each page once, the next one reached by its nav link
            page.wait_for_selector("#nav-logout", timeout=30000)          # the load event ran and answered
            policy = policies[f"{web_app.url}/{name}/"]
            assert re.search(r"script-src 'nonce-[\w-]+' 'strict-dynamic' 'unsafe-eval';", policy), policy
            assert "unsafe-inline" not in policy
            _works(page, name)
            assert page.evaluate("window.__csp") == [], (name, page.evaluate("window.__csp"))
            if i + 1 < len(names):
                page.click(f"#nav-{names[i + 1]}")
                page.wait_for_url(f"{web_app.url}/{names[i + 1]}/", timeout=20000)
        assert reports == [], reports
    finally:
        ctx.close()
        _release_leases(web_app, own)


def _release_leases(web_app, name: str) -> None:
    """Give back what the walk leased, as a curator closing the page would: the shared queue stays open
    to the curators of the tests that come after."""
    from sqlalchemy import select

    from db.models.curation import Lease
    from db.review.queue import release
    uid = web_app.user_id(name)
    with web_app.Session() as s:
        for pid in s.scalars(select(Lease.puzzle_id).where(Lease.user_id == uid)).all():
            release(s, uid, pid)


def test_injected_script_is_blocked_and_own_pages_are_self_only(web_app, browser):
    """The nonce is fresh per answer and only Gradio's own tags carry it: an inline script the page did
    not send (as an XSS would add) does not run; the login page allows only scripts of this origin."""
    ctx, page = login(browser, web_app, "ada", path="/admin/")
    ctx.add_init_script(WATCH)
    try:
        r1 = page.goto(f"{web_app.url}/admin/")
        page.wait_for_selector("#nav-logout", timeout=30000)
        ran = page.evaluate("""() => { const s = document.createElement('div');
            s.innerHTML = '<img src=x onerror="window.__pwned = 1">';
            document.body.appendChild(s);
            return new Promise(r => setTimeout(() => r(window.__pwned || 0), 500)); }""")
        assert ran == 0 and any(v.startswith("script-src") for v in page.evaluate("window.__csp"))
        r2 = page.goto(f"{web_app.url}/admin/")
        n1, n2 = (re.search(r"'nonce-([\w-]+)'", r.headers["content-security-policy"]).group(1) for r in (r1, r2))
        assert n1 != n2
        html = r2.text()
        assert html.count("<script") == html.count(f'<script nonce="{n2}"') > 0
    finally:
        ctx.close()
    with httpx.Client(base_url=web_app.url) as c:
        for path in ("/login", "/nothing-here", "/static/studio.css"):
            assert c.get(path).headers["content-security-policy"] == OWN_PAGES, path

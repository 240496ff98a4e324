"""The served app as tests and benchmarks drive it: `mvp serve` as a subprocess on a free port, Debian's
Chromium for Playwright (its headless build for the tests), a browser login, and a login over plain HTTP
as a browser does it (GET the form for its CSRF token, then POST)."""
from __future__ import annotations

import os
import re
import socket
import subprocess
import time
import urllib.request
from pathlib import Path

import httpx

from testkit.cli import ROOT, mvp_cmd

CHROMIUM = "/usr/bin/chromium"    # Debian's chromium: the benches' page timings (the browser a user runs)
# The browser tests' Chromium: Debian's chromium-headless-shell, the same Chromium release in its headless
# build (what Playwright itself launches headless). /usr/bin/chromium's --headless runs the whole browser
# without a window, its tab-strip WebUI renderer included: twice the CPU a page load costs the suite
# (bench/browser_page_cpu.py --variants tests,full-chromium; docs/BENCHMARKS.md).
TEST_CHROMIUM = "/usr/bin/chromium-headless-shell"
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
                 "--disable-sync", "--no-first-run", "--disable-quic"]
CSRF_RE = re.compile(r'name="csrf" value="([^"]+)"')
# An init script that records each Gradio event a page sends and each answer, in window.__phases as
# [performance.now(), "event" | "process_completed", the event's fn_index (null for an answer), its id]
# (Gradio offers no hook for them): it wraps window.fetch and reads the queue's event stream as it arrives.
# A queued event's id is the event_id its join answered with, which its process_completed message carries;
# an event outside the queue is a POST to /gradio_api/run/, its answer the reply.
EVENT_HOOK = """(() => { window.__phases = []; const f = window.fetch; let plain = 0;
  const note = (k, fn, id) => { const m = [performance.now(), k, fn, id]; window.__phases.push(m); return m; };
  window.fetch = async function(...a) {
    const u = String(a[0] && a[0].url || a[0]);
    const queued = u.includes('/queue/join'), run = u.includes('/gradio_api/run/');
    let sent = null;
    if (queued || run) {
      let fn = null; try { fn = JSON.parse(a[1].body).fn_index; } catch (e) {}
      sent = note('event', fn, run ? 'run-' + (++plain) : null); }
    const r = await f.apply(this, a);
    if (queued) r.clone().json().then(j => { sent[3] = j.event_id; }).catch(() => {});
    if (run) note('process_completed', null, sent[3]);
    if (u.includes('/queue/data')) {
      const rd = r.clone().body.getReader(), dec = new TextDecoder(); let buf = '';
      (async () => { for (;;) { const {done, value} = await rd.read(); if (done) break;
        buf += dec.decode(value, {stream: true}); const parts = buf.split('\\n\\n'); buf = parts.pop();
        for (const part of parts) for (const line of part.split('\\n')) {
          if (!line.startsWith('data:')) continue;
          try { const m = JSON.parse(line.slice(5));
                if (m.msg === 'process_completed') note('process_completed', null, m.event_id); } catch (e) {} } } })();
    }
    return r; }; })();"""


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Server:
    """`mvp serve` as a subprocess, as a user would start it; restartable on the same port."""

    def __init__(self, data: Path, db_url: str, port: int, log: Path, extra: list[str] | None = None):
        self.data, self.db_url, self.port, self.log_path = data, db_url, port, log
        self.extra = extra or []
        self.url = f"http://127.0.0.1:{port}"
        self.proc = None

    def start(self, timeout: float = 300) -> "Server":
        log = open(self.log_path, "a")
        self.proc = subprocess.Popen(mvp_cmd("serve", "--data", self.data, "--db", self.db_url,
                                             "--port", self.port, *self.extra),
                                     cwd=ROOT, stdout=log, stderr=subprocess.STDOUT,
                                     env=dict(os.environ, PYTHONUNBUFFERED="1",
                                              GRADIO_TEMP_DIR=str(self.data.parent / "gradio-tmp")))
        log.close()
        deadline = time.time() + timeout
        while True:
            try:
                urllib.request.urlopen(self.url + "/login", timeout=2)
                return self
            except OSError:
                if self.proc.poll() is not None or time.time() > deadline:
                    raise RuntimeError("mvp serve did not start:\n" + self.log_path.read_text()[-3000:])
                time.sleep(0.2)

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.proc = None

    def restart(self) -> None:
        self.stop()
        self.start()


VIEWPORT = {"width": 1400, "height": 1000}


def dataframe_rows(elem_id: str) -> str:
    """CSS selector of the body rows a Gradio Dataframe has drawn: it draws only those that fit its
    height (a virtual list), so a row below the fold is not in the page at all."""
    return f"#{elem_id} .virtual-row"


# The page's first answer has arrived (the bar names its user, which a load event fills in) and no
# Gradio event is running (Gradio marks a component waiting on one `.pending`).
SETTLED_JS = "() => !!document.querySelector('.mvp-user[data-user]') && !document.querySelector('.pending')"


def wait_settled(page, timeout_ms: float = 30000, quiet_ms: int = 250) -> None:
    """Wait until the page's load events have answered: SETTLED_JS holds, and still holds `quiet_ms`
    later (an event chained after another starts in between)."""
    page.wait_for_function(SETTLED_JS, timeout=timeout_ms)
    page.wait_for_timeout(quiet_ms)
    page.wait_for_function(SETTLED_JS, timeout=timeout_ms)


def pick(page, elem_id: str, text, attempts: int = 6) -> None:
    """Choose an entry of the Gradio dropdown `#elem_id` by (part of) its visible label (a str or a
    compiled pattern), as a user does: open it, click the entry. Gradio draws the open list where the
    input was when it opened, so an answer that moves the input meanwhile (a load event's) leaves the
    list off screen: the user closes it and opens it again, and so does this, every 5 s, `attempts` times."""
    from playwright.sync_api import TimeoutError as PlaywrightTimeout
    for attempt in range(attempts):
        page.click(f"#{elem_id} input")
        try:
            page.locator("li[role=option]", has_text=text).first.click(timeout=5000)
            return
        except PlaywrightTimeout:
            if attempt == attempts - 1:
                raise
            page.keyboard.press("Escape")


def fill_login(page, name: str, password: str) -> None:
    """Log in on the login form `page` shows."""
    page.fill("#login-user", name)
    page.fill("#login-password", password)
    page.click("#login-submit")


def browser_login(browser, url: str, name: str, password: str, path: str = "/"):
    """A fresh browser context logged in as `name` at base `url`; returns (context, page) at `path`."""
    ctx = browser.new_context(viewport=VIEWPORT)
    page = ctx.new_page()
    page.goto(url + path)
    fill_login(page, name, password)
    return ctx, page


class SharedLogins:
    """Logged-in browser contexts kept for a whole test run, one per (base url, user, context options):
    each `page()` is a new tab in that user's context, so it reuses the context's HTTP cache (Gradio's
    bundle is sent immutable: a second load fetches none of its ~74 files) and skips the login. In
    bench/browser_page_cpu.py a reused context halves both Chromium's and the server's CPU per page load.
    For tests that only read or act within their session; a test that logs out, lets a session expire,
    changes a password or reads a first visit's state needs `browser_login`'s fresh context. If the
    session has ended anyway (a studio restarted on a new database, a revoke), the login form shows
    and is filled again."""

    def __init__(self, browser):
        self.browser = browser
        self.contexts: dict[tuple, object] = {}

    def page(self, url: str, name: str, password: str, path: str = "/", **options):
        key = (url, name, repr(sorted(options.items())))
        ctx = self.contexts.get(key)
        if ctx is None:
            ctx = self.contexts[key] = self.browser.new_context(**({"viewport": VIEWPORT} | options))
        page = ctx.new_page()
        page.goto(url + path)
        if page.url.split("?")[0].endswith("/login"):
            fill_login(page, name, password)
        return page

    def close(self) -> None:
        for ctx in self.contexts.values():
            ctx.close()
        self.contexts.clear()


def login_form(url: str, client: httpx.Client | None = None, headers: dict | None = None) -> tuple[httpx.Client, str]:
    """(client holding the login-CSRF cookie, the form's token)."""
    c = client or httpx.Client(base_url=url, timeout=60, follow_redirects=False)
    r = c.get("/login", headers=headers or {})
    assert r.status_code == 200, r.text
    return c, CSRF_RE.search(r.text).group(1)


def post_login(c: httpx.Client, token: str, name: str, password: str, headers: dict | None = None,
               next_url: str = "/") -> httpx.Response:
    return c.post("/login", data={"username": name, "password": password, "csrf": token, "next": next_url},
                  headers=headers or {})


def http_login(url: str, name: str, password: str, headers: dict | None = None) -> httpx.Client:
    """An httpx client logged in as `name` (asserts the login worked)."""
    c, tok = login_form(url, headers=headers)
    r = post_login(c, tok, name, password, headers=headers)
    assert r.status_code == 303, (r.status_code, r.text[:300])
    return c

"""The HTTP-level guards every request passes (docs/web.md, "What the server refuses"), as one ASGI
middleware function installed by `app.web.server.build_app`:

0. Host names: a request whose Host is not one of the allowed names (app/web/settings.py) gets 400
   before anything else (Starlette's TrustedHostMiddleware), so a DNS-rebinding page cannot reach the
   server under a name of its own.
1. Cross-site writes: an unsafe method (POST, PUT, PATCH, DELETE) whose `Origin` is not this server's
   own host -- the same host as the Host header *and* an allowed name, since Host alone is the
   client's word -- or whose `Sec-Fetch-Site` says another origin sent it, is refused 403. This is what stops
   a page on another port of the same host (same *site*, so SameSite cookies are sent) from posting
   logins, logouts, verdicts or Gradio events. Clients that send neither header (curl, httpx) are not
   browsers carrying someone else's cookie and pass.
2. Pages by role: a request under a page's prefix (`/admin/...`, including its Gradio endpoints) needs
   a session whose role may use that page (401/403, or a redirect to the login page for a page GET).
3. Gradio routes no page needs: uploads (no page takes files: `upload`, `process_recording`),
   component server functions, deep links, and Gradio's run-history and "vibe" editor routes are
   refused for everyone; its monitoring and profiling routes (endpoint
   timings) for everyone but admins.
   Past these, one user's (or, logged out, one address's) requests and request-body bytes in flight
   are bounded (app/web/limits.py `InFlight`, sizes in app/web/settings.py): over them a request waits
   for a slot, then gets 429. Gradio's event streams (no body, long-lived) are not counted. So are the
   bytes of the Gradio events a user has joined that have not run yet (`QueuedEvents`): a join over
   them waits for the user's events to run, then gets 429.
4. Faults: a request that ran into a full disk or a read-only data folder (507), a damaged database
   (503, then every change refused until a restart), an out-of-range Gradio event (400) or a client
   that went away is answered in one line (app/web/faults.py), a page for a browser, JSON otherwise;
   the transaction it was in was rolled back, so nothing is half-written.
5. Headers on every answer: a Content-Security-Policy with `script-src` and `frame-ancestors 'self'`
   (app/web/csp.py; X-Frame-Options for old browsers) against injected scripts and click-jacking,
   `X-Content-Type-Options: nosniff`, `Referrer-Policy`."""
from __future__ import annotations

from urllib.parse import quote, urlsplit

from fastapi import Request
from fastapi.responses import HTMLResponse, JSONResponse, RedirectResponse
from starlette.concurrency import run_in_threadpool

from app.web.auth import COOKIE, PAGE_ROLES, Auth
from app.web.csp import with_policy
from app.web.faults import StoreHealth, answer, one_line
from app.web.limits import JOIN, STREAMS, InFlight, QueuedEvents, body_cost
from app.web.settings import ServeSettings

SECURITY_HEADERS = {                  # and the Content-Security-Policy: app/web/csp.py
    "X-Frame-Options": "SAMEORIGIN",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "same-origin",
}
UNSAFE_METHODS = frozenset({"POST", "PUT", "PATCH", "DELETE"})
# First path segment under /<page>/ (after an optional gradio_api/): who may call it.
# process_recording is an upload too (a screen recording, handed to ffmpeg when it is installed);
# component_server runs server functions of components no page has; deep_link writes a file per call.
GRADIO_REFUSED = ("upload", "upload_progress", "process_recording", "component_server", "deep_link",
                  "run-history", "runs", "vibe-edit", "undo-vibe-edit", "vibe-code", "vibe-starter-queries", "dev")
GRADIO_ADMIN_ONLY = ("monitoring", "profiling")


def cross_site(request: Request, settings: ServeSettings) -> bool:
    """True when a browser says another origin sent this request."""
    origin = request.headers.get("origin")
    if origin is not None:
        parts = urlsplit(origin)
        host = (parts.hostname or "").lower()
        host = f"[{host}]" if ":" in host else host
        return origin == "null" or parts.netloc.lower() != request.headers.get("host", "").lower() \
            or not settings.host_allowed(host)
    site = request.headers.get("sec-fetch-site")
    return site is not None and site not in ("same-origin", "none")


def _gradio_segment(rest: str) -> str:
    rest = rest[len("gradio_api/"):] if rest.startswith("gradio_api/") else rest
    return rest.split("/", 1)[0]


def _forbidden_page(user, page: str, pages) -> str:
    from app.web.common import forbidden_html
    mine = [p for p, roles in PAGE_ROLES.items() if user.role in roles and p in pages]
    return forbidden_html(user.name, user.role, page, mine)


def _refused(status: int, error: str) -> JSONResponse:
    return JSONResponse({"error": error}, status_code=status)


async def _page_check(request: Request, auth: Auth, pages, user) -> JSONResponse | RedirectResponse | None:
    parts = request.url.path.split("/", 2)
    page = parts[1] if len(parts) > 1 else ""
    if page not in pages:
        return None
    rest = parts[2] if len(parts) > 2 else ""
    seg = _gradio_segment(rest)
    if seg in GRADIO_REFUSED:
        return _refused(403, f"forbidden: /{page}/{rest} is not offered (no page uses it)")
    if user is None:
        if request.method == "GET" and rest == "":
            nxt = quote(request.url.path + ("?" + request.url.query if request.url.query else ""))
            return RedirectResponse(f"/login?next={nxt}", status_code=303)
        return _refused(401, "not logged in")
    if user.role not in PAGE_ROLES[page]:
        if request.method == "GET" and rest == "":     # a page, opened in the browser: a page answers
            return HTMLResponse(_forbidden_page(user, page, pages), status_code=403)
        return _refused(403, f"forbidden: {user.name} may not use the {page} page")
    if seg in GRADIO_ADMIN_ONLY and user.role != "admin":
        return _refused(403, f"forbidden: /{page}/{rest} is for admins")
    return None


def install(app, auth: Auth, pages, settings: ServeSettings) -> None:
    """Add the guard middleware to `app`. `request.state.user` is the caller's
    `db.users.sessions.SessionUser` (or None) for the routes behind it."""
    inflight = InFlight(settings.max_requests_per_user, settings.max_body_bytes_per_user, settings.queue_wait_s)
    queued = app.state.queued_events = QueuedEvents(settings.max_queued_bytes_per_user, settings.queue_wait_s)

    health = app.state.health = StoreHealth()         # shared with the Gradio apps' handlers (server.py)

    @app.middleware("http")
    async def guard(request: Request, call_next):
        try:
            if health.damaged and request.method in UNSAFE_METHODS:
                resp = one_line(request, 503, health.damaged)
            else:
                resp = await _guarded(request, call_next, auth, pages, settings, inflight, queued)
        except Exception as e:            # noqa: BLE001  only the faults app/web/faults.py knows are answered
            resp = answer(request, e, health)
            if resp is None:
                raise
        resp = await with_policy(request, resp, pages)
        for k, v in SECURITY_HEADERS.items():
            resp.headers.setdefault(k, v)
        return resp

    from starlette.middleware.trustedhost import TrustedHostMiddleware
    app.add_middleware(TrustedHostMiddleware, allowed_hosts=list(settings.allowed_hosts), www_redirect=False)


async def _guarded(request: Request, call_next, auth: Auth, pages, settings: ServeSettings, inflight: InFlight,
                   queued: QueuedEvents):
    token = request.cookies.get(COOKIE)
    user = await run_in_threadpool(auth.session_of, token) if token else None
    request.state.user = user
    if request.method in UNSAFE_METHODS and cross_site(request, settings):
        return _refused(403, "forbidden: cross-site request (its Origin is not this server)")
    refused = await _page_check(request, auth, pages, user)
    if refused is not None:
        return refused
    if STREAMS.search(request.url.path):
        return await call_next(request)
    who = f"user:{user.name}" if user is not None else f"addr:{request.client.host if request.client else '?'}"
    cost = body_cost(request.method, dict(request.scope["headers"]))
    async with inflight.slot(who, cost) as ok:
        if not ok:
            return _refused(429, "too many requests in flight for this user; try again in a few seconds")
        if user is not None and request.method == "POST" and JOIN.match(request.url.path) \
                and not await queued.room(user.name, cost):
            return _refused(429, "too many events queued for this user; try again in a few seconds")
        return await call_next(request)

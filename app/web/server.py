"""The web app: a FastAPI server with a login page, the data-directory file routes and one Gradio
Blocks app per page, each mounted at its own path (/curate, /rollouts, /stats, /train, /admin). What every request passes
first (cross-site refusal, role per page, closed Gradio routes, security headers) is app/web/guards.py.

Why one mount per page rather than tabs in one Blocks: access is then enforced by HTTP path. A
request to a page, or to any of its Gradio endpoints (/rollouts/gradio_api/...), is refused with
401/403 unless the session's role may use that page, before Gradio sees it; and each handler checks
the role again (`app.web.common.guard`). Files are served only through /data and /thumb, which accept
media under the data directory's media folders and nothing else (`app.web.files.servable`, the one
rule every file route uses, the Data page's export download included)."""
from __future__ import annotations

import os
import secrets
import sys
from pathlib import Path

import gradio as gr
from fastapi import FastAPI, Request
from fastapi.responses import FileResponse, HTMLResponse, JSONResponse, RedirectResponse, Response
from fastapi.staticfiles import StaticFiles
from starlette.exceptions import HTTPException as StarletteHTTPException

from mvp_core import resources
from app.web.auth import COOKIE, PAGE_ROLES, SESSION_TTL_S, Auth
from app.web.common import WebContext
from app.web.pages import BY_PATH, PAGES, Page, script_url
from app.web.settings import ServeSettings

ROOT = Path(__file__).resolve().parents[2]   # the repository (app/web/server.py -> ../..)
STATIC_DIR = resources.folder("static")
CSRF_COOKIE = "mvp_login_csrf"
MAX_NAME_FIELD = 200                 # login form: longer user names are refused before any check
MAX_NEXT = 2000                      # a longer `next` is dropped (the login goes to "/")
LOGIN_FIELDS = 8                     # the login form has four (username, password, next, csrf)
LOGIN_FIELD_BYTES = 8 * 1024         # its longest field, `next`, is cut at MAX_NEXT anyway
GRADIO_MAX_FILE = "1kb"              # no page takes uploads (the guard refuses the route); a second line
GRADIO_DELETE_CACHE = (3600, 3600)   # Gradio's temporary files older than an hour go, hourly
# Events of one page that may run at once. Given through Gradio's own setting for it, read by the queue each
# Blocks makes when it is created: a second `queue()` call would build the page's app once more, 17% of
# the pages' build time at each start (docs/BENCHMARKS.md, the suite's row)
GRADIO_CONCURRENCY = "8"
# Gradio's queue polls for work every 1 ms (events) and 10 ms (progress) when it has none, per page: an idle
# server with its seven pages burned ~11% of a core at rest. 50 ms / 100 ms, Gradio's own values on Windows,
# add at most 50 ms to an event's start (a Gradio event; the curate page's verdicts are plain JSON requests)
# and keep the server at rest under 1% of a core (docs/BENCHMARKS.md, "Server CPU at rest").
GRADIO_QUEUE_IDLE_POLL_S = 0.05
GRADIO_PROGRESS_IDLE_POLL_S = 0.1
# After every event Gradio's queue summarises the events it recorded (up to 10,000) in a pandas table for its
# monitoring dashboard, which the pages turn off (enable_monitoring=False): 7-20 ms of CPU an event, more as
# the server ages (bench/gradio_event_analytics.py, docs/BENCHMARKS.md). Nothing reads the summary then, so
# the queue keeps one record and never summarises.
GRADIO_ANALYTICS_KEPT = 1
HEAD = ('<link rel="icon" href="/favicon.ico"><link rel="stylesheet" href="/static/studio.css">'
        '<script src="/static/lightbox.js" defer></script>')   # any frame opens large (static/lightbox.js)


def _page_builders() -> dict:
    """path -> build(ctx) returning a gr.Blocks, for every page in the registry (app/web/pages/__init__.py)."""
    return {p.path: p.module().build for p in PAGES}


def _head(page: Page) -> str:
    """The page's <head> additions: the shared icon and style, then the page package's own scripts."""
    return HEAD + "".join(f'<script src="{script_url(page, name)}" defer></script>' for name in page.scripts)


def login_page(csrf: str, error: str = "", next_url: str = "/") -> str:
    from app.web.templating import render
    return render("login.html", csrf=csrf, error=error, next_url=next_url)


def _safe_next(url: str) -> str:
    """Only same-site paths (no //host, no scheme) may be redirected to after login."""
    ok = url.startswith("/") and not url.startswith("//") and "\\" not in url and len(url) <= MAX_NEXT
    return url if ok else "/"


def _secure(request: Request, secure_cookies: bool | None) -> bool:
    """--secure-cookies / --no-secure-cookies; by default Secure exactly when the request came over
    HTTPS (uvicorn takes the scheme from X-Forwarded-Proto of a trusted proxy)."""
    return request.url.scheme == "https" if secure_cookies is None else secure_cookies


def _login_form(request: Request, secure: bool, error: str = "", next_url: str = "/",
                status: int = 200, headers: dict | None = None) -> HTMLResponse:
    """The login page with a login-CSRF token: the same random value in the form and in a
    SameSite=Strict cookie; a login post must carry both (a page of another site cannot read it)."""
    tok = request.cookies.get(CSRF_COOKIE) or ""
    if not (20 <= len(tok) <= 100 and tok.replace("-", "").replace("_", "").isalnum()):
        tok = secrets.token_urlsafe(24)
    resp = HTMLResponse(login_page(tok, error, _safe_next(next_url)), status_code=status, headers=headers)
    resp.set_cookie(CSRF_COOKIE, tok, max_age=3600, httponly=True, samesite="strict", secure=secure,
                    path="/login")
    resp.headers["Cache-Control"] = "no-store"
    return resp


def _add_auth_routes(app: FastAPI, auth: Auth, builders: dict, secure_cookies: bool | None) -> None:
    @app.get("/", include_in_schema=False)
    def index(request: Request):
        user = request.state.user
        if user is None:
            return RedirectResponse("/login", status_code=303)
        pages = [p for p in auth.pages_for(user.name) if p in builders]
        return RedirectResponse(f"/{pages[0]}/" if pages else "/login", status_code=303)

    @app.get("/login", include_in_schema=False)
    def login_form(request: Request, next: str = "/"):
        return _login_form(request, _secure(request, secure_cookies), next_url=next)

    @app.post("/login", include_in_schema=False)
    async def login(request: Request):
        # The form is parsed here with tight bounds, not by FastAPI's Form(...) parameters: Starlette's
        # own bounds (1,000 fields, 1 MB a field) answer a raw JSON 400, and FastAPI's 422 echoes every
        # field, the password too. Here a bad form is the login page with one line.
        secure = _secure(request, secure_cookies)
        try:
            form = await request.form(max_files=0, max_fields=LOGIN_FIELDS, max_part_size=LOGIN_FIELD_BYTES)
        except StarletteHTTPException:
            return _login_form(request, secure, f"The login form was refused: more than {LOGIN_FIELDS} fields "
                               f"or a field over {LOGIN_FIELD_BYTES // 1024} KiB.", "/", 400)
        username, password, next, csrf = (str(form.get(k, d)) for k, d in
                                          (("username", ""), ("password", ""), ("next", "/"), ("csrf", "")))
        next = next if len(next) <= MAX_NEXT else "/"
        cookie = request.cookies.get(CSRF_COOKIE) or ""
        if not csrf or len(csrf) > 100 or not secrets.compare_digest(csrf.encode(), cookie.encode()):
            return _login_form(request, secure, "The login form expired; please log in again.", next, 403)
        if len(username) > MAX_NAME_FIELD:
            return _login_form(request, secure, f"The user name is longer than {MAX_NAME_FIELD} characters.",
                               next, 400)
        client = request.client.host if request.client else "?"
        res = await auth.login(username.strip(), password, client)
        if res.retry_after_s:
            wait = int(res.retry_after_s + 0.999)
            return _login_form(request, secure, f"Too many login attempts; try again in {wait} s.", next, 429,
                               {"Retry-After": str(wait)})
        if res.token is None:
            return _login_form(request, secure, "Wrong user name or password.", next, 401)
        resp = RedirectResponse(_safe_next(next), status_code=303)
        resp.set_cookie(COOKIE, res.token, max_age=SESSION_TTL_S, httponly=True, samesite="lax", secure=secure)
        resp.delete_cookie(CSRF_COOKIE, path="/login")
        return resp

    @app.post("/logout", include_in_schema=False)
    def logout(request: Request):
        auth.logout(request.cookies.get(COOKIE))
        resp = RedirectResponse("/login", status_code=303)
        resp.delete_cookie(COOKIE)
        return resp


def _add_file_routes(app: FastAPI, data: Path) -> None:
    from app.web.files import PathRefused, safe_path, thumbnail

    def serve(request: Request, path: str, thumb: bool) -> Response:
        if request.state.user is None:
            return JSONResponse({"error": "not logged in"}, status_code=401)
        try:
            real = thumbnail(data, path) if thumb else safe_path(data, path)
        except PathRefused as e:
            return JSONResponse({"error": str(e)}, status_code=e.status)
        # Frames are content-addressed (the name is the hash), so the browser may keep them.
        return FileResponse(real, headers={"Cache-Control": "private, max-age=86400"})

    @app.get("/data/{path:path}", include_in_schema=False)
    def data_file(request: Request, path: str):
        return serve(request, path, thumb=False)

    @app.get("/thumb/{path:path}", include_in_schema=False)
    def thumb_file(request: Request, path: str):
        return serve(request, path, thumb=True)


def build_app(data_dir: str | os.PathLike, db_url: str | None = None, secure_cookies: bool | None = None,
              settings: ServeSettings | None = None):
    """The FastAPI app serving everything. Only media under `data_dir` are ever served
    (app/web/files.py); `secure_cookies` None means "Secure when the request came over HTTPS";
    `settings` None: the local host names, no trusted proxy (app/web/settings.py)."""
    from app.web import guards, not_found
    settings = settings or ServeSettings()

    ctx = _web_context(data_dir, db_url)
    app = FastAPI(title="MVP Studio", docs_url=None, redoc_url=None, openapi_url=None)
    app.state.ctx = ctx
    builders = _page_builders()
    ctx.pages = tuple(builders)
    _add_cors_policy(app)
    not_found.install(app)
    guards.install(app, ctx.auth, builders, settings)
    _add_auth_routes(app, ctx.auth, builders, secure_cookies)
    _add_file_routes(app, ctx.data_dir)
    _add_static_routes(app)
    _add_page_apis(app, ctx, builders)
    from app.web import gradio_assets, gradio_matplotlib
    gradio_assets.install(app, builders)        # before the mounts: they match first
    gradio_matplotlib.install()                 # no matplotlib import around each event
    _mount_pages(app, ctx, builders)
    from app.web.limits import BodyLimit
    # added last = outermost: before any route, guard or Gradio reads a byte
    app.add_middleware(BodyLimit, body_timeout_s=settings.body_timeout_s)
    return app


def _web_context(data_dir, db_url: str | None) -> WebContext:
    from db.engine import open_db
    data = Path(data_dir).resolve()
    data.mkdir(parents=True, exist_ok=True)
    Session = open_db(db_url, data, check=True)   # damaged pages: refused with one line now, not 500s later
    return WebContext(Session=Session, data_dir=data, auth=Auth(Session))


def _add_cors_policy(app: FastAPI) -> None:
    """Our own CORS policy, allowing no other origin: Gradio then adds none of its own (it would let
    any page on a localhost port, or any origin when served under a real host name, read answers
    with the user's cookies)."""
    from fastapi.middleware.cors import CORSMiddleware
    app.add_middleware(CORSMiddleware, allow_origins=[], allow_credentials=False)


def _add_static_routes(app: FastAPI) -> None:
    scripts = {(p.package, name): p.folder / name for p in PAGES for name in p.scripts}

    @app.get("/static/pages/{package}/{name}", include_in_schema=False)
    def page_script(package: str, name: str):
        """A page package's script: only the files the registry lists (nothing else in the package)."""
        path = scripts.get((package, name))
        if path is None:
            return JSONResponse({"error": "not found"}, status_code=404)
        return FileResponse(path, media_type="text/javascript", headers={"Cache-Control": "no-cache"})

    app.mount("/static", StaticFiles(directory=STATIC_DIR), name="static")

    @app.get("/favicon.ico", include_in_schema=False)
    def favicon():
        return FileResponse(STATIC_DIR / "favicon.ico", media_type="image/x-icon",
                            headers={"Cache-Control": "public, max-age=86400"})


def _add_page_apis(app: FastAPI, ctx: WebContext, builders: dict) -> None:
    """Plain HTTP routes of the pages that have them (their api.py), registered before the Gradio
    mounts so they match first."""
    for p in PAGES:
        if p.api and p.path in builders:
            p.module("api").register(app, ctx)


def _mount_pages(app: FastAPI, ctx: WebContext, builders: dict) -> None:
    """One Gradio Blocks per page at /<page>, open only to the roles that may use the page."""
    os.environ["GRADIO_DEFAULT_CONCURRENCY_LIMIT"] = GRADIO_CONCURRENCY
    for page, build in builders.items():
        from app.web.common import SESSION_SCRIPT, keep_state
        from app.web.faults import gradio_handlers
        blocks = keep_state(build(ctx))     # a user error: one line, every component kept as it was
        _slow_idle_polling(blocks)
        _no_event_analytics(blocks)
        app.state.queued_events.pages.append(blocks)     # one user's queued events bounded (app/web/guards.py)
        blocks.delete_cache = GRADIO_DELETE_CACHE
        gr.mount_gradio_app(app, blocks, path=f"/{page}", auth_dependency=_page_user(page),
                            head=SESSION_SCRIPT + _head(BY_PATH[page]),
                            footer_links=[], ssr_mode=False, show_error=True, max_file_size=GRADIO_MAX_FILE,
                            blocked_paths=[str(ctx.data_dir)], enable_monitoring=False,
                            app_kwargs={"exception_handlers": gradio_handlers(app.state.health)})


def _slow_idle_polling(blocks: gr.Blocks) -> None:
    """Gradio has no setting for its queue's idle polling; its Queue keeps the intervals as attributes."""
    queue = getattr(blocks, "_queue", None)
    for name, seconds in (("sleep_when_free", GRADIO_QUEUE_IDLE_POLL_S),
                          ("progress_update_sleep_when_free", GRADIO_PROGRESS_IDLE_POLL_S)):
        if hasattr(queue, name):
            setattr(queue, name, seconds)


def _no_event_analytics(blocks: gr.Blocks) -> None:
    """Gradio has no setting to turn its per-event analytics off; its Queue keeps the two knobs as attributes
    (its own spelling)."""
    queue = getattr(blocks, "_queue", None)
    if hasattr(queue, "ANAYLTICS_CACHE_FREQUENCY"):
        queue.ANAYLTICS_CACHE_FREQUENCY = sys.maxsize          # events between two summaries: never
    if hasattr(queue, "ANALYTICS_MAX_EVENTS"):
        queue.ANALYTICS_MAX_EVENTS = GRADIO_ANALYTICS_KEPT


def _page_user(page: str):
    """Gradio's auth dependency for `page`: the user's name when their role may use it, else None."""
    def dep(request: Request) -> str | None:
        user = getattr(request.state, "user", None)
        return user.name if user is not None and user.role in PAGE_ROLES[page] else None
    return dep


def serve_forever(data_dir, db_url=None, host: str = "127.0.0.1", port: int = 7860,
                  secure_cookies: bool | None = None, settings: ServeSettings | None = None) -> None:
    import uvicorn

    from app.web.malloc import return_large_buffers
    return_large_buffers()             # request bodies' memory is given back, not kept (app/web/malloc.py)
    settings = settings or ServeSettings.from_env(host)
    app = build_app(data_dir, db_url, secure_cookies=secure_cookies, settings=settings)
    # X-Forwarded-For/-Proto are believed only from the proxies the admin names; by default from nobody,
    # not uvicorn's 127.0.0.1: a local client could otherwise pick the address the login throttle counts
    # (docs/security.md, "Deployment").
    trusted = ",".join(settings.trusted_proxies)
    from app.web.slow_clients import header_deadline
    uvicorn.run(app, host=host, port=port, log_level="warning", proxy_headers=bool(trusted),
                forwarded_allow_ips=trusted or None, http=header_deadline(settings.header_timeout_s))

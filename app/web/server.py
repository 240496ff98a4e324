"""The web app: a FastAPI server with a login page, the data-directory file routes and one Gradio
Blocks app per page, each mounted at its own path (/curate, /rollouts, /stats, /train, /admin).

Why one mount per page rather than tabs in one Blocks: access is then enforced by HTTP path. A
request to a page, or to any of its Gradio endpoints (/rollouts/gradio_api/...), is refused with
401/403 unless the session's role may use that page, before Gradio sees it; and each handler checks
the role again (`app.web.common.guard`). Frames are served only through /data and /thumb, which accept
paths under the data directory and nothing else (`app.web.files.safe_path`)."""
from __future__ import annotations

import os
from pathlib import Path
from urllib.parse import quote

import gradio as gr
from fastapi import FastAPI, Form, Request
from fastapi.responses import FileResponse, HTMLResponse, JSONResponse, RedirectResponse, Response
from fastapi.staticfiles import StaticFiles

from app.web.auth import COOKIE, PAGE_ROLES, SESSION_TTL_S, Auth
from app.web.common import WebContext, esc

ROOT = Path(__file__).resolve().parents[2]   # the repository root
STATIC_DIR = ROOT / "static"
HEAD = ('<link rel="stylesheet" href="/static/studio.css">'
        '<script src="/static/curate.js" defer></script><script src="/static/hotkeys.js" defer></script>')


def _page_builders() -> dict:
    """page -> build(ctx) returning a gr.Blocks. Pages whose module is not there yet are left out."""
    from app.web.pages import admin as page_admin
    from app.web.pages import curate as page_curate
    from app.web.pages import rollouts as page_rollouts
    from app.web.pages import stats as page_stats
    builders = {"curate": page_curate.build, "rollouts": page_rollouts.build, "stats": page_stats.build,
                "admin": page_admin.build}
    train = _train_builder()
    if train is not None:
        builders["train"] = train
    return builders


def _train_builder():
    """The trainer's page (app/web/pages/train.py, owned by the trainer), wrapped so that it works whether
    their function returns a Blocks or adds components to the Blocks it is called inside."""
    try:
        from app.web.pages import train as page_train
    except ImportError:
        return None
    fn = getattr(page_train, "build_train_page", None) or getattr(page_train, "build", None)
    if fn is None:
        return None

    def build(ctx: WebContext):
        from app.web.common import nav_html
        def nav_fn(request: gr.Request):
            return nav_html(ctx, request.username, "train")
        with gr.Blocks(title="MVP Studio · Train") as demo:
            nav = gr.HTML()
            out = _call_train(fn, ctx)
            demo.load(nav_fn, None, nav)
        return out if isinstance(out, gr.Blocks) and out is not demo else demo
    return build


def _call_train(fn, ctx: WebContext):
    import inspect
    params = inspect.signature(fn).parameters
    kw = {k: v for k, v in {"ctx": ctx, "Session": ctx.Session, "data_dir": ctx.data_dir,
                            "auth": ctx.auth}.items() if k in params}
    return fn(**kw)


def login_page(error: str = "", next_url: str = "/") -> str:
    err = f'<p class="mvp-login-error" id="login-error">{esc(error)}</p>' if error else ""
    return f"""<!doctype html><html><head><meta charset="utf-8"><title>MVP Studio · Log in</title>
<link rel="stylesheet" href="/static/studio.css"></head><body class="mvp-login-body">
<form class="mvp-login" method="post" action="/login">
<h1>MVP Studio</h1>{err}
<input type="hidden" name="next" value="{esc(next_url)}">
<label>User <input name="username" id="login-user" autocomplete="username" autofocus required></label>
<label>Password <input name="password" id="login-password" type="password" autocomplete="current-password" required></label>
<button type="submit" id="login-submit">Log in</button></form></body></html>"""


def _safe_next(url: str) -> str:
    """Only same-site paths (no //host, no scheme) may be redirected to after login."""
    return url if url.startswith("/") and not url.startswith("//") and "\\" not in url else "/"


def build_app(data_dir: str | os.PathLike, db_url: str | None = None, secure_cookies: bool = False):
    """The FastAPI app serving everything. `data_dir` is the only directory files are served from."""

    from app.web.files import PathRefused, safe_path, thumbnail
    from db.engine import open_db

    data = Path(data_dir).resolve()
    data.mkdir(parents=True, exist_ok=True)
    Session = open_db(db_url, data)
    auth = Auth(Session)
    ctx = WebContext(Session=Session, data_dir=data, auth=auth)
    app = FastAPI(title="MVP Studio", docs_url=None, redoc_url=None, openapi_url=None)
    app.state.ctx = ctx

    def token(request: Request) -> str | None:
        return request.cookies.get(COOKIE)

    builders = _page_builders()
    ctx.pages = tuple(builders)

    @app.middleware("http")
    async def page_access(request: Request, call_next):
        """Refuse every request under a page's prefix unless the session's role may use that page."""
        parts = request.url.path.split("/", 2)
        page = parts[1] if len(parts) > 1 else ""
        if page in builders:
            name = auth.user_of_token(token(request))
            if name is None:
                if request.method == "GET" and (len(parts) == 2 or parts[2] == ""):
                    nxt = quote(str(request.url.path) + ("?" + request.url.query if request.url.query else ""))
                    return RedirectResponse(f"/login?next={nxt}", status_code=303)
                return JSONResponse({"error": "not logged in"}, status_code=401)
            if auth.role_of(name) not in PAGE_ROLES[page]:
                return JSONResponse({"error": f"forbidden: {name} may not use the {page} page"},
                                    status_code=403)
        return await call_next(request)

    @app.get("/", include_in_schema=False)
    def index(request: Request):
        name = auth.user_of_token(token(request))
        if name is None:
            return RedirectResponse("/login", status_code=303)
        pages = [p for p in auth.pages_for(name) if p in builders]
        return RedirectResponse(f"/{pages[0]}/" if pages else "/logout", status_code=303)

    @app.get("/login", include_in_schema=False)
    def login_form(next: str = "/"):
        return HTMLResponse(login_page(next_url=_safe_next(next)))

    @app.post("/login", include_in_schema=False)
    async def login(request: Request, username: str = Form(""), password: str = Form(""),
                    next: str = Form("/")):
        client = request.client.host if request.client else "?"
        tok = await auth.login(username.strip(), password, client)
        if tok is None:
            return HTMLResponse(login_page("Wrong user name or password.", _safe_next(next)), status_code=401)
        resp = RedirectResponse(_safe_next(next), status_code=303)
        resp.set_cookie(COOKIE, tok, max_age=SESSION_TTL_S, httponly=True, samesite="lax", secure=secure_cookies)
        return resp

    @app.get("/logout", include_in_schema=False)
    def logout(request: Request):
        auth.logout(token(request))
        resp = RedirectResponse("/login", status_code=303)
        resp.delete_cookie(COOKIE)
        return resp

    def serve(request: Request, path: str, thumb: bool) -> Response:
        if auth.user_of_token(token(request)) is None:
            return JSONResponse({"error": "not logged in"}, status_code=401)
        try:
            real = thumbnail(data, path) if thumb else safe_path(data, path)
        except PathRefused as e:
            return JSONResponse({"error": str(e)}, status_code=404 if "no such file" in str(e) else 403)
        # Frames are content-addressed (the name is the hash), so the browser may keep them.
        return FileResponse(real, headers={"Cache-Control": "private, max-age=86400"})

    @app.get("/data/{path:path}", include_in_schema=False)
    def data_file(request: Request, path: str):
        return serve(request, path, thumb=False)

    @app.get("/thumb/{path:path}", include_in_schema=False)
    def thumb_file(request: Request, path: str):
        return serve(request, path, thumb=True)

    app.mount("/static", StaticFiles(directory=STATIC_DIR), name="static")

    if "curate" in builders:            # the curate page's JSON API, matched before its Gradio mount
        from app.web.curate_api import register as register_curate_api
        register_curate_api(app, ctx)

    for page, build in builders.items():
        blocks = build(ctx)
        blocks.queue(default_concurrency_limit=8)

        def dep(request: Request, _page=page) -> str | None:
            return auth.user_for_page(token(request), _page)
        gr.mount_gradio_app(app, blocks, path=f"/{page}", auth_dependency=dep, head=HEAD,
                            footer_links=[], ssr_mode=False, show_error=True)
    return app


def serve_forever(data_dir, db_url=None, host: str = "127.0.0.1", port: int = 7860) -> None:
    import uvicorn
    app = build_app(data_dir, db_url)
    uvicorn.run(app, host=host, port=port, log_level="warning")

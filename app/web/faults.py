"""What the server answers when a request runs into a fault (docs/security.md, "Faults"): one line to
the client and at most one line to the log, never a bare 500 with a traceback. The guard middleware
(app/web/guards.py) hands every exception a route raised to `answer`; what is not listed here is a
bug and keeps its traceback.

- Storage faults (full disk, read-only folder, I/O error): 507 with db/faults.py's line.
- A damaged database: 503 with the line, and from then on `StoreHealth` refuses every change (503)
  until the server is restarted on a repaired or restored database (startup checks it, db/engine.py).
- A Gradio call naming an event or component the page does not have (an out-of-range fn_index): 400.
- A client that went away mid-body: nothing to answer, nothing logged."""
from __future__ import annotations

import html
import logging
import re

from fastapi import Request
from fastapi.responses import HTMLResponse, JSONResponse, Response
from starlette.requests import ClientDisconnect

LOG = logging.getLogger("mvp.web")
GRADIO_CALL = re.compile(r"^/[^/]+/gradio_api/(queue/join|run/|call/|api/)")


class StoreHealth:
    """Whether this server found its database damaged while running (kept in memory: a restart runs
    the startup check, which refuses a damaged database in one line)."""

    def __init__(self):
        self.damaged: str | None = None


def one_line(request: Request, status: int, line: str) -> Response:
    """The line as a small page when a browser asked for one (a page, the login form), else JSON."""
    if "text/html" in request.headers.get("accept", "") or request.url.path == "/login":
        return HTMLResponse('<!doctype html><html><head><meta charset="utf-8"><title>MVP Studio</title>'
                            '<link rel="stylesheet" href="/static/studio.css"></head><body>'
                            f'<p class="mvp-msg mvp-error" id="storage-error">{html.escape(line)}</p>'
                            '</body></html>', status_code=status)
    return JSONResponse({"error": line}, status_code=status)


def answer(request: Request, exc: Exception, health: StoreHealth) -> Response | None:
    """The one-line answer for `exc`, or None (not a known fault: re-raise it)."""
    from db.faults import corruption, storage_problem
    if isinstance(exc, ClientDisconnect):
        return Response(status_code=400)              # nobody is listening; no log line
    line = storage_problem(exc)
    if line is not None:
        LOG.error("%s %s: %s", request.method, request.url.path, line)
        return one_line(request, 507, line)
    line = corruption(exc)
    if line is not None:
        if health.damaged is None:                    # one log line, not one per request
            LOG.critical("%s %s: %s", request.method, request.url.path, line)
        health.damaged = line
        return one_line(request, 503, line)
    if isinstance(exc, (KeyError, IndexError)) and GRADIO_CALL.match(request.url.path):
        line = f"bad request: no such event or component on this page ({type(exc).__name__} {exc})"
        LOG.warning("%s %s: %s", request.method, request.url.path, line[:200])
        return JSONResponse({"error": line[:200]}, status_code=400)
    return None


def gradio_handlers(health: StoreHealth) -> dict:
    """Exception handlers for each mounted Gradio app (`mount_gradio_app(app_kwargs=...)`): Gradio's app
    answers its own errors with a bare 500 and a logged traceback before the guard could see them."""
    async def handle(request: Request, exc: Exception) -> Response:
        resp = answer(request, exc, health)
        if resp is None:
            raise exc
        return resp
    return {KeyError: handle, IndexError: handle, ClientDisconnect: handle}

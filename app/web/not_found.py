"""An unknown address answers a page a browser can show (a way back to the studio), not the raw
`{"detail": "Not Found"}` FastAPI writes; a script or API client still gets JSON (docs/web.md)."""
from __future__ import annotations

from fastapi import FastAPI, Request
from fastapi.exception_handlers import http_exception_handler
from fastapi.responses import HTMLResponse
from starlette.exceptions import HTTPException


def install(app: FastAPI) -> None:
    @app.exception_handler(HTTPException)
    async def not_found(request: Request, exc: HTTPException):
        if exc.status_code == 404 and request.method == "GET" and "text/html" in request.headers.get("accept", ""):
            from app.web.templating import render
            return HTMLResponse(render("not_found.html", path=request.url.path[:200]), status_code=404)
        return await http_exception_handler(request, exc)

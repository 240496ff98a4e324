"""The one shape of a page's JSON action API: POST <prefix>/<action> with a JSON object, answered
with a JSON object (the curate and gallery pages' scripts call theirs).

What every such route checks, in order: a logged-in session (401), the role may use the page
(403, `Auth.require`, the second line behind the app's guard), a known action (404), a JSON body
(415: other sites' forms cannot send one, and the app's guard refuses cross-origin posts), at most
`app.web.limits.MAX_JSON_BYTES` and nested at most `MAX_JSON_DEPTH` deep, an object (400). The
handler runs in a worker thread; a UserError it raises is answered 400 with one line, `{"error": ...}`."""
from __future__ import annotations

from typing import Callable

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse
from starlette.concurrency import run_in_threadpool

from app.web.auth import Forbidden
from app.web.common import WebContext
from app.web.limits import BadBody, read_json
from mvp_core.errors import UserError


def add_action_routes(app: FastAPI, ctx: WebContext, page: str, prefix: str, actions: tuple[str, ...],
                      dispatch: Callable[[int, str, str, dict], dict]) -> None:
    """Add POST `prefix`/{action}; `dispatch(user_id, user_name, action, body)` answers a checked request."""

    @app.post(prefix + "/{action}", include_in_schema=False, name=f"{page}_api")
    async def action_route(action: str, request: Request):
        user = getattr(request.state, "user", None)      # set by app.web.guards from the session
        name = None if user is None else user.name
        if name is None:
            return JSONResponse({"error": "not logged in"}, status_code=401)
        try:
            uid = ctx.auth.require(name, page)
        except Forbidden as e:
            return JSONResponse({"error": f"forbidden: {e}"}, status_code=403)
        if action not in actions:
            return JSONResponse({"error": f"no action {action!r}"}, status_code=404)
        if request.headers.get("content-type", "").split(";")[0].strip() != "application/json":
            return JSONResponse({"error": "bad request: send JSON (Content-Type: application/json)"},
                                status_code=415)
        try:
            body = await read_json(request)
        except BadBody as e:
            return JSONResponse({"error": str(e)}, status_code=e.status)
        if not isinstance(body, dict):
            return JSONResponse({"error": "bad request: the body must be a JSON object"}, status_code=400)
        try:
            out = await run_in_threadpool(dispatch, uid, name, action, body)
        except UserError as e:
            return JSONResponse({"error": str(e)}, status_code=400)
        return JSONResponse(out, headers={"Cache-Control": "no-store"})

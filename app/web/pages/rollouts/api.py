"""The Rollouts page's view API: GET /rollouts/api/view?left=&right=&puzzle=, called by
app/web/pages/rollouts/rollouts.js. It answers the four panes (the puzzle, the left and right answer groups, the run)
as HTML in one JSON object; without `left` it picks the page's default (the newest version, its
run's other one, the first puzzle of its first video), so the script can fetch the first view while
Gradio is still starting.

Why not Gradio events: measured on the shared VM (docs/BENCHMARKS.md, Rollouts), a puzzle switch
through Gradio's run/predict and re-render took 220-320 ms, of which building the view is ~8 ms.

Access: under /rollouts, so the app's middleware already refused anyone whose role may not open the
page; the handler checks the role again. Read-only (GET, no state changes); bad parameters get 400
with one line, `{"error": ...}`."""
from __future__ import annotations

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse
from starlette.concurrency import run_in_threadpool

from app.web.auth import Forbidden
from app.web.common import WebContext
from app.web.limits import not_text
from app.web.pages.rollouts import choices as picks
from app.web.pages.rollouts.page import PAGE, opening, view
from mvp_core.errors import UserError

PREFIX = "/rollouts/api"
MAX_PARAM = 300


def _param(request: Request, name: str) -> str | None:
    v = request.query_params.get(name)
    if v is None or v == "":
        return None
    if len(v) > MAX_PARAM:
        raise UserError(f"bad request: {name} is longer than {MAX_PARAM} characters")
    if not_text(v):       # %00: PostgreSQL refuses NUL in a text parameter (a 500), as in the curate API
        raise UserError(f"bad request: {name} holds a NUL or a lone surrogate")
    return v


def answer(ctx: WebContext, left: str | None, right: str | None, pid: str | None) -> dict:
    """The panes for (left, right, puzzle), or the default selection when `left` is None."""
    if left is None:
        o = opening(ctx)
        left, right, pid = o.left, o.right or None, o.puzzle
    with ctx.Session() as s:
        known = {k for _, k in picks.sources(s)}
    for name, key in (("left", left), ("right", right)):
        if key is not None and key not in known:
            raise UserError(f"bad request: {name} is not a model version with stored answers")
    return {"left": left, "right": right, "puzzle": pid, "html": view(ctx, left, right, pid)}


def register(app: FastAPI, ctx: WebContext) -> None:
    """Add the route; call before the Rollouts page's Gradio app is mounted at /rollouts."""

    @app.get(PREFIX + "/view", include_in_schema=False)
    async def rollouts_view(request: Request):
        user = getattr(request.state, "user", None)      # set by app.web.guards from the session
        if user is None:
            return JSONResponse({"error": "not logged in"}, status_code=401)
        try:
            ctx.auth.require(user.name, PAGE)
        except Forbidden as e:
            return JSONResponse({"error": f"forbidden: {e}"}, status_code=403)
        try:
            args = [_param(request, n) for n in ("left", "right", "puzzle")]
            out = await run_in_threadpool(answer, ctx, *args)
        except UserError as e:
            return JSONResponse({"error": str(e)}, status_code=400)
        return JSONResponse(out, headers={"Cache-Control": "no-store"})

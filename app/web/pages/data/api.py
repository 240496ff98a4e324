"""The Data page's HTTP route: GET /datasets/export/<zip>, an export made on the page."""
from __future__ import annotations

from fastapi import FastAPI
from fastapi.responses import FileResponse, JSONResponse

from app.web.common import WebContext
from app.web.pages.data import ops
from app.web.pages.data.page import PAGE
from mvp_core.errors import UserError


def register(app: FastAPI, ctx: WebContext) -> None:
    """GET /datasets/export/<zip>: an export made on this page (the app's guard has checked the role
    for the /datasets prefix; the name must be a plain zip name under DATA/exports)."""

    @app.get(f"/{PAGE}/export/{{name}}", include_in_schema=False)
    def download(name: str):
        try:
            path = ops.export_file(ctx, name)
        except UserError as e:
            return JSONResponse({"error": str(e)}, status_code=404)
        return FileResponse(path, media_type="application/zip", filename=path.name,
                            headers={"Cache-Control": "no-store"})

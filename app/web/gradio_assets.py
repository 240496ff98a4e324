"""Gradio's frontend bundle (/<page>/assets/<file>), served compressed once rather than on every request.

Why by hand: Gradio serves each page's ~70 bundle files through its own mount and Brotli-compresses them
again on every request (and with no Cache-Control, so a browser asks again on the next page). A page load
spent ~0.25 s of server CPU compressing the same 1.1 MB, out of ~0.8 s in all (docs/web.md, "Speed and
memory"; bench/browser_page_cpu.py). The files never change while the server runs and their names carry
a content hash, so each is compressed once per encoding and kept, and the browser may keep it too.

These routes sit on the outer app before the Gradio mounts, so they match first and pass the same guard
as the page itself (app/web/guards.py: a session whose role may use the page). A name that is not a
file of the bundle (another folder, a link, a missing file) is a 404."""
from __future__ import annotations

import gzip
import importlib.resources
import re
import threading
from pathlib import Path

from fastapi import FastAPI, Request
from fastapi.responses import FileResponse, Response

BUNDLE = Path(str(importlib.resources.files("gradio").joinpath("templates/frontend/assets")))
NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,200}$")      # the bundle's files: flat, hashed names
# what the bundle's text files are sent as (compressed); fixed here because `mimetypes` answers from the
# system's tables and from what imported libraries added (Gradio adds application/javascript for .js)
TEXT_TYPES = {".js": "text/javascript", ".mjs": "text/javascript", ".css": "text/css", ".json": "application/json",
              ".svg": "image/svg+xml", ".map": "application/json", ".html": "text/html", ".txt": "text/plain"}
BROTLI_QUALITY = 5          # Gradio compresses at 4 per request; once per file, a denser 5 costs nothing later
MAX_CACHED_BYTES = 64 * 1024 * 1024
# hashed names: the content of a name never changes, so the browser keeps it for a year (private: only
# the signed-in user's browser, as the routes are behind the login)
CACHE_CONTROL = "private, max-age=31536000, immutable"


class CompressedFiles:
    """{(file name, encoding): compressed bytes}, filled on first request, bounded by MAX_CACHED_BYTES
    (past it a file is compressed for each request, as before)."""

    def __init__(self, folder: Path = BUNDLE, max_bytes: int = MAX_CACHED_BYTES):
        self.folder, self.max_bytes = folder, max_bytes
        self._data: dict[tuple[str, str], bytes] = {}
        self._size = 0
        self._lock = threading.Lock()

    def path_of(self, name: str) -> Path | None:
        """The bundle file `name`, or None for anything else (another folder, a link out, a missing file)."""
        if not NAME.match(name):
            return None
        path = self.folder / name
        return path if path.is_file() and not path.is_symlink() else None

    def get(self, name: str, encoding: str) -> bytes:
        key = (name, encoding)
        with self._lock:
            hit = self._data.get(key)
        if hit is not None:
            return hit
        raw = (self.folder / name).read_bytes()
        if encoding == "br":
            import brotli
            data = brotli.compress(raw, quality=BROTLI_QUALITY, mode=brotli.MODE_TEXT)
        else:
            data = gzip.compress(raw, compresslevel=6, mtime=0)
        with self._lock:
            if key not in self._data and self._size + len(data) <= self.max_bytes:
                self._data[key] = data
                self._size += len(data)
        return data


def encoding_for(accept: str) -> str | None:
    """br, else gzip, else None (send the file as it is), from an Accept-Encoding header."""
    offered = {part.split(";", 1)[0].strip().lower() for part in accept.split(",")}
    return "br" if "br" in offered else "gzip" if "gzip" in offered else None


def install(app: FastAPI, pages) -> None:
    """GET /<page>/assets/<name> for every page path, before the Gradio mounts (server.py)."""
    files = CompressedFiles()

    async def bundle_file(request: Request, name: str):
        path = files.path_of(name)
        if path is None:
            return Response(status_code=404)
        headers = {"Cache-Control": CACHE_CONTROL, "Vary": "Accept-Encoding"}
        media = TEXT_TYPES.get(path.suffix)
        enc = encoding_for(request.headers.get("accept-encoding", "")) if media else None
        if enc is None:
            return FileResponse(path, headers=headers, media_type=media)     # fonts, images: as they are
        from starlette.concurrency import run_in_threadpool
        body = await run_in_threadpool(files.get, name, enc)
        if media != "image/svg+xml":
            media += "; charset=utf-8"
        return Response(body, media_type=media, headers={**headers, "Content-Encoding": enc})

    for page in pages:
        app.add_api_route(f"/{page}/assets/{{name}}", bundle_file, methods=["GET"], include_in_schema=False)

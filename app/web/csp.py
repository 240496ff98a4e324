"""The Content-Security-Policy of every answer (docs/security.md, "Content-Security-Policy"), set by the
guard middleware (app/web/guards.py).

- The app's own pages (login, the 403 page, a storage fault) run no inline script: `script-src 'self'`.
- A Gradio page's HTML carries inline scripts (its config, its loader) and its events' `js=` snippets
  are compiled with `new Function`: each page answer gets a fresh nonce on every `<script>` tag of the
  HTML Gradio sent, and `script-src 'nonce-N' 'strict-dynamic' 'unsafe-eval'`. 'strict-dynamic' lets
  the scripts Gradio's own (nonced) loader adds run, and nothing else: no script injected into the
  HTML, no inline event handler and no script from another origin. 'unsafe-eval' is what Gradio's
  `js=` events need (measured: tests/test_security_csp.py); 'unsafe-inline' is not given.

Every policy also says `frame-ancestors 'self'` (no framing by other sites), `object-src 'none'` and
`base-uri 'self'`."""
from __future__ import annotations

import re
import secrets

from starlette.requests import Request
from starlette.responses import Response

BASE = "frame-ancestors 'self'; object-src 'none'; base-uri 'self'"
OWN_PAGES = f"script-src 'self'; {BASE}"
_SCRIPT_TAG = re.compile(rb"<script(?=[\s>])", re.IGNORECASE)


def gradio_policy(nonce: str) -> str:
    return f"script-src 'nonce-{nonce}' 'strict-dynamic' 'unsafe-eval'; {BASE}"


def _gradio_page(request: Request, resp: Response, pages) -> bool:
    """A page's own HTML as Gradio answers GET /<page>/ (not an API answer, not encoded)."""
    parts = request.url.path.split("/", 2)
    return (request.method == "GET" and len(parts) == 3 and parts[1] in pages and parts[2] == ""
            and resp.status_code == 200 and resp.headers.get("content-type", "").startswith("text/html")
            and "content-encoding" not in resp.headers)


async def with_policy(request: Request, resp: Response, pages) -> Response:
    """`resp` with its Content-Security-Policy; a Gradio page's HTML is rewritten with a fresh nonce."""
    if not _gradio_page(request, resp, pages):
        resp.headers["Content-Security-Policy"] = OWN_PAGES
        return resp
    body = b"".join([chunk async for chunk in resp.body_iterator])
    nonce = secrets.token_urlsafe(18)
    body = _SCRIPT_TAG.sub(b'<script nonce="' + nonce.encode() + b'"', body)
    out = Response(body, status_code=resp.status_code)
    out.raw_headers = [(k, v) for k, v in resp.raw_headers if k.lower() != b"content-length"] + \
        [(b"content-length", str(len(body)).encode())]
    out.headers["Content-Security-Policy"] = gradio_policy(nonce)
    return out

"""Gradio's bundle served compressed once (app/web/gradio_assets.py), over real HTTP on the shared app: the
bytes a browser gets decompress to the file Gradio ships, in the encoding it asked for, cacheable by the
browser; the route keeps the page's guard (no session: 401; a role the page refuses: 403) and serves
nothing but the bundle's own files."""
from __future__ import annotations

import gzip
import http.client
from urllib.parse import urlparse

import brotli
import pytest
from fixtures_security import session_token
from fixtures_web import PASSWORDS

from app.web.gradio_assets import BUNDLE, CompressedFiles, encoding_for

pytestmark = [pytest.mark.serve]


def _get(app, path: str, cookie: str | None = None, accept: str | None = None):
    u = urlparse(app.url)
    c = http.client.HTTPConnection(u.hostname, u.port, timeout=30)
    c.putrequest("GET", path, skip_accept_encoding=True)
    if cookie:
        c.putheader("Cookie", f"mvp_session={cookie}")
    if accept is not None:
        c.putheader("Accept-Encoding", accept)
    c.endheaders()
    r = c.getresponse()
    body, headers = r.read(), {k.lower(): v for k, v in r.getheaders()}
    c.close()
    return r.status, headers, body


def _a_script() -> str:
    return sorted(p.name for p in BUNDLE.glob("*.js"))[0]


def test_the_bundle_is_served_compressed_cacheable_and_behind_the_page_guard(web_app):
    name = _a_script()
    raw = (BUNDLE / name).read_bytes()
    rhea = session_token(web_app.url, "rhea", PASSWORDS["rhea"])
    for _ in range(2):                                   # the second answer comes from the cache: the same bytes
        st, h, body = _get(web_app, f"/train/assets/{name}", rhea, "gzip, deflate, br")
        assert st == 200 and h["content-encoding"] == "br" and brotli.decompress(body) == raw
        assert "immutable" in h["cache-control"] and "Accept-Encoding" in h["vary"]
        assert h["content-type"].startswith("text/javascript")
    st, h, body = _get(web_app, f"/train/assets/{name}", rhea, "gzip")
    assert st == 200 and h["content-encoding"] == "gzip" and gzip.decompress(body) == raw
    st, h, body = _get(web_app, f"/train/assets/{name}", rhea, "")
    assert st == 200 and "content-encoding" not in h and body == raw and h["content-type"].startswith("text/javascript")
    # the page's guard: no session, and a curator on a researcher's page
    assert _get(web_app, f"/train/assets/{name}")[0] == 401
    cora = session_token(web_app.url, "cora", PASSWORDS["cora"])
    assert _get(web_app, f"/train/assets/{name}", cora, "br")[0] == 403
    assert _get(web_app, f"/curate/assets/{name}", cora, "br")[0] == 200
    # nothing but the bundle's files: a path out of it, another folder, a missing name
    for path in ("/train/assets/..%2F..%2F__init__.py", "/train/assets/../../routes.py",
                 "/train/assets/%2e%2e/templates", "/train/assets/no-such-file.js"):
        st, _, body = _get(web_app, path, rhea, "br")
        assert st in (400, 403, 404), (path, st)
        assert b"import" not in body


def test_names_encodings_and_the_cache_bound(tmp_path):
    (tmp_path / "a-1.js").write_text("console.log('a');" * 200)
    (tmp_path / "sub").mkdir()
    (tmp_path / "link.js").symlink_to(tmp_path / "a-1.js")
    files = CompressedFiles(tmp_path, max_bytes=10)
    assert files.path_of("a-1.js") == tmp_path / "a-1.js"
    for bad in ("../a-1.js", "sub", "link.js", ".hidden", "a-1.js/..", "missing.js", ""):
        assert files.path_of(bad) is None, bad
    big = brotli.decompress(files.get("a-1.js", "br"))
    assert big == (tmp_path / "a-1.js").read_bytes() and files._data == {}     # over the bound: not kept
    assert encoding_for("gzip, deflate, br") == "br" and encoding_for("gzip;q=1.0") == "gzip"
    assert encoding_for("") is None and encoding_for("identity") is None

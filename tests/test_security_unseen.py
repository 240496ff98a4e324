"""Security probes from clients and attacks the rest of the suite does not use, against a real `mvp serve`
over plain HTTP (httpx, raw multipart): JSON strings that are valid JSON but no text (a lone surrogate,
a NUL), Gradio's upload-like routes (screen-recording upload, component server functions, deep links),
a symlink in DATA/exports leading out of it, over-long login fields, and a user name shown in an admin
message. Each was a defect: a 500, an open upload, the linked file served, FastAPI's 422 dump echoing
the password, a doubly escaped name. The server runs over an empty data directory (none of these
needs a puzzle), so the file starts fast."""
from __future__ import annotations

import io
import json
import zipfile

import httpx
import pytest
from fixtures_security import http_login
from fixtures_web import Server, free_port

USERS = {"cur": ("curator", "cur-password-1"), "res": ("researcher", "res-password-1"),
         "adm": ("admin", "adm-password-1"), '<b>x"y': ("curator", "odd-password-1")}


@pytest.fixture(scope="module")
def bare(tmp_path_factory):
    """(server, data dir, Session): `mvp serve` over an empty data directory with a user of each role
    and one whose name is markup."""
    from db.engine import open_db
    from db.users.accounts import add_user
    base = tmp_path_factory.mktemp("unseen")
    data = base / "data"
    data.mkdir()
    url = f"sqlite:///{data / 'mvp.sqlite'}"
    Session = open_db(url, data)
    with Session() as s:
        for name, (role, pw) in USERS.items():
            add_user(s, name, role, pw)
        s.commit()
    (base / "secret.txt").write_text("TOP SECRET outside the data dir")
    srv = Server(data, url, free_port(), base / "serve.log").start()
    yield srv, data, Session
    srv.stop()


def client(bare, name: str) -> httpx.Client:
    return http_login(bare[0].url, name, USERS[name][1])


def one_line_error(r: httpx.Response, status: int) -> str:
    assert r.status_code == status, (r.status_code, r.text[:300])
    msg = r.json()["error"]
    assert msg and "\n" not in msg
    return msg


@pytest.mark.serve
def test_json_strings_that_are_no_text_get_one_line_400(bare):
    """`"\\ud800"` is valid JSON but no UTF-8 text: the SQLite driver raised on it (a 500, and uvicorn
    dropped the connection); a NUL is refused by PostgreSQL. Each is now a 400 with one line, in any
    field, and nothing is written."""
    from sqlalchemy import func, select

    from db.models.curation import PuzzleVerdict, VerdictEvent
    c = client(bare, "cur")
    bodies = {"load": [b'{"puzzle": "\\ud800"}', b'{"state": {"pid": "\\udfff"}}',
                       b'{"state": {"pid": null, "back": ["\\ud800"]}}', b'{"state": {"filter": {"video": "\\ud800"}}}',
                       b'{"puzzle": "x\\u0000y"}', b'{"\\ud800": 1}'],
              "filter": [b'{"filters": {"video": "\\ud800"}}', b'{"filters": {"kind": "\\udc00"}}'],
              "verdict": [b'{"state": {"pid": "\\ud800"}, "verdict": "skip"}',
                          b'{"state": {"pid": "p"}, "verdict": "skip", "note": "\\ud800"}'],
              "move": [b'{"state": {"pid": "p", "back": ["\\ud800"]}, "step": -1}'],
              "answer": [b'{"state": {"pid": "p"}, "labels": ["\\ud800"], "seconds": 1}']}
    for action, raws in bodies.items():
        for raw in raws:
            r = c.post(f"/curate/api/{action}", content=raw, headers={"Content-Type": "application/json"})
            assert "NUL or a lone surrogate" in one_line_error(r, 400), (action, raw)
    # a real pair (an emoji) is text and passes; the server still answers on the same connection
    r = c.post("/curate/api/load", json={"puzzle": "\U0001f600"})
    assert r.status_code == 200, r.text[:300]
    assert c.post("/curate/api/progress", json={}).status_code == 200
    with bare[2]() as s:
        assert s.scalar(select(func.count()).select_from(VerdictEvent)) == 0
        assert s.scalar(select(func.count()).select_from(PuzzleVerdict)) == 0


def test_gradio_upload_like_routes_are_refused(bare):
    """Gradio's /process_recording took a multipart upload from any logged-in user (a curator too),
    wrote it to its temp folder and answered it back (and hands it to ffmpeg when one is installed);
    /component_server answered a malformed body with a 500; /deep_link writes a file per GET. No page
    uses any of them: 403 for every role and every page."""
    for who in ("cur", "adm"):
        c = client(bare, who)
        for page in ("curate", "admin") if who == "adm" else ("curate",):
            r = c.post(f"/{page}/gradio_api/process_recording",
                       files={"video": ("x.mp4", b"uploaded by a curator " * 10, "video/mp4")})
            assert "not offered" in one_line_error(r, 403) and b"uploaded by" not in r.content, (who, page)
            r = c.post(f"/{page}/gradio_api/component_server",
                       json={"session_hash": "x", "component_id": 1, "fn_name": "ls", "data": None})
            one_line_error(r, 403)
            r = c.post(f"/{page}/gradio_api/component_server/", content=b"not json")
            one_line_error(r, 403)
            one_line_error(c.get(f"/{page}/gradio_api/deep_link", params={"session_hash": "x"}), 403)


def test_export_downloads_follow_no_symlink_out_of_exports(bare):
    """GET /datasets/export/<zip> checked the name but opened whatever a symlink there pointed at: a
    researcher downloaded exports/leak.zip -> ../../secret.txt. Now decided by the real path: a zip
    inside DATA/exports is served; a link leading out (to a file outside, or to the database) is 404."""
    _, data, _ = bare
    exports = data / "exports"
    exports.mkdir(exist_ok=True)
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as z:
        z.writestr("puzzles.jsonl", "{}\n")
    (exports / "real.zip").write_bytes(buf.getvalue())
    (exports / "alias.zip").symlink_to(exports / "real.zip")          # stays inside: fine
    (exports / "leak.zip").symlink_to(data.parent / "secret.txt")
    (exports / "db.zip").symlink_to(data / "mvp.sqlite")
    (exports / "up.zip").symlink_to(data / "puzzles.jsonl")
    res = client(bare, "res")
    for name in ("real.zip", "alias.zip"):
        r = res.get(f"/datasets/export/{name}")
        assert r.status_code == 200 and r.content == buf.getvalue(), (name, r.status_code)
    for name in ("leak.zip", "db.zip", "up.zip"):
        r = res.get(f"/datasets/export/{name}")
        assert one_line_error(r, 404) == "no such export", name
        assert b"SECRET" not in r.content and b"SQLite format" not in r.content
    # curators never reach the route at all
    assert client(bare, "cur").get("/datasets/export/real.zip").status_code == 403


def test_long_login_fields_get_the_login_page_not_a_json_dump(bare):
    """A password over 1024 characters (or a long user name or `next`) was FastAPI's 422: a JSON dump
    of the field, password included, instead of the login page. Now the page with one line; a long
    password is a wrong password (and counts as a guess), a long `next` is dropped."""
    from fixtures_security import login_form, post_login
    url = bare[0].url
    long_pw = "p" * 5000
    c, tok = login_form(url)
    r = post_login(c, tok, "cur", long_pw)
    assert r.status_code == 401 and "text/html" in r.headers["content-type"]
    assert "Wrong user name or password." in r.text and long_pw not in r.text
    c, tok = login_form(url)
    r = post_login(c, tok, "u" * 300, "whatever-pass")
    assert r.status_code == 400 and "The user name is longer than 200 characters." in r.text
    c, tok = login_form(url)
    r = post_login(c, tok, "cur", USERS["cur"][1], next_url="/curate/" + "x" * 3000)
    assert r.status_code == 303 and r.headers["location"] == "/", r.headers.get("location")


def test_admin_message_shows_a_markup_user_name_escaped_once(bare):
    """The "password changed" message escaped the user name twice (`&amp;lt;b&amp;gt;`): the name
    `<b>x"y` showed as entities. Called as the page calls it, over Gradio's HTTP API."""
    c = client(bare, "adm")
    name = '<b>x"y'
    r = c.post("/admin/gradio_api/call/set_password", json={"data": [name, "new-password-12"]})
    assert r.status_code == 200, r.text[:300]
    event = r.json()["event_id"]
    out = None
    with c.stream("GET", f"/admin/gradio_api/call/set_password/{event}") as resp:
        for line in resp.iter_lines():
            if line.startswith("data:"):
                out = json.loads(line[5:])
    html = out[0]
    assert "password of &lt;b&gt;x&#34;y changed" in html or "password of &lt;b&gt;x&quot;y changed" in html, html
    assert "&amp;" not in html and "<b>" not in html
    http_login(bare[0].url, name, "new-password-12")                # the change itself took effect


def test_admin_set_role_on_a_name_that_is_no_text_is_one_line(bare):
    """A user name holding a lone surrogate (valid in Gradio's JSON, no text) reached the SQLite
    driver, and its raw encoding error was the admin's message; now the name check says what is
    wrong, as when adding such a user."""
    c = client(bare, "adm")
    body = json.dumps({"data": ["a\ud800b", "curator"]})                # "\ud800" escaped: valid JSON
    r = c.post("/admin/gradio_api/call/set_role", content=body, headers={"content-type": "application/json"})
    assert r.status_code == 200, r.text[:300]
    event = r.json()["event_id"]
    text = ""
    with c.stream("GET", f"/admin/gradio_api/call/set_role/{event}") as resp:
        for line in resp.iter_lines():
            text += line + "\n"
    assert "U+D800" in text and "codec" not in text and "mvp-msg-error" in text, text[:500]   # one line in the page

"""One request-size limit for every route, enforced before the body is read (app/web/limits.py BodyLimit):
50 MB sent to /login, to a Gradio route and to the JSON API each get a one-line 413, declared or chunked,
and the server's memory does not grow by the upload; /login takes url-encoded forms only."""
from __future__ import annotations

import httpx
import psutil
import pytest
from fixtures_security import http_login
from fixtures_web import Server, free_port

from app.cli.main import main
from app.web.limits import MAX_BODY_BYTES

BIG = 50 * 1024 * 1024


@pytest.fixture(scope="module")
def limit_server(tmp_path_factory):
    data = tmp_path_factory.mktemp("limits") / "data"
    data.mkdir()
    url = f"sqlite:///{data / 'mvp.sqlite'}"
    assert main(["users", "add", "big", "--role", "curator", "--password", "big-sender-password",
                 "--data", str(data), "--db", url]) == 0
    srv = Server(data, url, free_port(), data.parent / "serve.log").start()
    yield srv
    srv.stop()


def _rss(srv) -> int:
    return psutil.Process(srv.proc.pid).memory_info().rss


def _chunks(total: int, size: int = 1024 * 1024):
    sent = 0
    while sent < total:
        yield b"x" * size
        sent += size


ROUTES = ["/login", "/curate/gradio_api/queue/join", "/curate/gradio_api/upload", "/curate/api/load", "/no/such/route"]


@pytest.mark.serve
@pytest.mark.parametrize("route", ROUTES)
@pytest.mark.parametrize("chunked", [False, True])
def test_50_mb_is_refused_before_it_is_read(limit_server, route, chunked):
    c = http_login(limit_server.url, "big", "big-sender-password")
    before = _rss(limit_server)
    body = _chunks(BIG) if chunked else b"x" * BIG
    try:
        r = c.post(route, content=body, headers={"content-type": "application/octet-stream"}, timeout=60)
        status, text = r.status_code, r.text
    except httpx.HTTPError:           # the server may close the connection while a chunked body streams
        status, text = 413, ""
    if chunked:    # no length declared: a route that never reads the body may answer first (403, 404, 415)
        assert status in (413, 403, 404, 415), (status, text[:200])
    else:
        assert status == 413 or (route == "/login" and status == 415), (status, text[:200])
    if text:
        assert "\n" not in text.strip() and "Traceback" not in text
    assert _rss(limit_server) - before < 50 * 1024 * 1024
    assert httpx.get(limit_server.url + "/login", timeout=30).status_code == 200   # the server still answers


def test_login_takes_url_encoded_forms_only(limit_server):
    r = httpx.post(limit_server.url + "/login", files={"password": ("p.bin", b"x" * 1000)},
                   data={"username": "big"}, timeout=30)
    assert r.status_code == 415 and "url-encoded" in r.text and "\n" not in r.text.strip()
    assert http_login(limit_server.url, "big", "big-sender-password")   # a real login still works


def test_the_limit_leaves_room_for_every_form(limit_server):
    """The largest legitimate body (a Train page YAML config) is far below the limit."""
    from mvp_core.config import MAX_CONFIG_BYTES
    assert MAX_CONFIG_BYTES * 4 < MAX_BODY_BYTES


def test_40_parallel_bodies_from_one_user_keep_memory_bounded(limit_server):
    """40 parallel 2 MB JSON bodies to a Gradio route from one curator: the per-user bounds on requests
    and bytes in flight (app/web/limits.py UserLimit) hold the server's memory growth under 100 MB; the
    requests are answered (some maybe 429 after waiting), and the server answers afterwards."""
    import json
    from concurrent.futures import ThreadPoolExecutor
    c = http_login(limit_server.url, "big", "big-sender-password")
    cookies = dict(c.cookies)
    body = json.dumps({"data": ["x" * 2_000_000], "fn_index": 0, "session_hash": "bodies1"}).encode()
    assert len(body) < MAX_BODY_BYTES
    before = _rss(limit_server)

    def one(_):
        with httpx.Client(base_url=limit_server.url, cookies=cookies, timeout=120) as cl:
            return cl.post("/curate/gradio_api/queue/join", content=body,
                           headers={"content-type": "application/json"}).status_code
    with ThreadPoolExecutor(40) as ex:
        codes = list(ex.map(one, range(40)))
    grown = _rss(limit_server) - before
    print(f"40 parallel 2 MB bodies: RSS +{grown / 2**20:.0f} MB, answers {sorted(set(codes))}")
    assert all(code < 500 for code in codes), codes
    assert grown < 100 * 1024 * 1024, f"grew {grown / 2**20:.0f} MB; answers {codes}"
    assert c.post("/curate/api/load", json={}).status_code == 200        # the user is served again
    assert httpx.get(limit_server.url + "/login", timeout=30).status_code == 200


def test_one_users_queued_event_bytes_are_bounded():
    """A join waits while the user's unfinished Gradio events hold more body bytes than the bound, and gets
    room once they have run (app/web/limits.py QueuedEvents). Real Gradio objects: a page's Blocks, its
    Queue and the Events it keeps, so a Gradio release that moves them fails here, not in production."""
    import asyncio
    from concurrent.futures import ThreadPoolExecutor

    import gradio as gr
    from gradio.queueing import Event
    from starlette.requests import Request

    from app.web.limits import QueuedEvents
    with gr.Blocks() as blocks:
        gr.Button().click(lambda: None)
    fn = next(iter(blocks.fns.values()))

    def join(user: str, size: int) -> Event:
        request = Request({"type": "http", "method": "POST", "path": "/curate/gradio_api/queue/join",
                           "headers": [(b"content-length", str(size).encode())]})
        event = Event(f"session-{user}", fn, request, user)
        blocks._queue.event_ids_to_events[event._id] = event
        return event

    mb = 1024 * 1024
    bound = QueuedEvents(max_bytes=8 * mb, wait_s=0.3, poll_s=0.01)
    bound.pages.append(blocks)

    async def scenario():
        first = join("ann", 3 * mb)
        assert bound.queued("ann") == (1, 3 * mb) and bound.queued("bob") == (0, 0)
        assert await bound.room("ann", 2 * mb)                  # 5 MB of 8
        second, _ = join("ann", 3 * mb), join("ann", 2 * mb)
        assert not await bound.room("ann", 2 * mb)              # 10 MB of 8: waited, then refused
        assert await bound.room("bob", 2 * mb)                  # another user is not held up by ann
        bound.wait_s = 5.0
        waiting = asyncio.create_task(bound.room("ann", 2 * mb))
        await asyncio.sleep(0.05)
        assert not waiting.done()
        for event in (first, second):                           # Gradio drops an event once it has run
            blocks._queue.event_ids_to_events.pop(event._id)
        assert await asyncio.wait_for(waiting, 2.0)             # 4 MB of 8: room
    lone = QueuedEvents(max_bytes=64 * 1024, wait_s=0.0)
    lone.pages.append(blocks)

    async def alone():
        blocks._queue.event_ids_to_events.clear()
        return await lone.room("cy", 2 * mb)                    # nothing queued: a lone event always fits
    # a thread of its own: the browser tests' Playwright keeps an event loop running in this one
    with ThreadPoolExecutor(1) as pool:
        pool.submit(asyncio.run, scenario()).result()
        assert pool.submit(asyncio.run, alone()).result()

"""Bounds on what a client may send to the app's own JSON endpoints: the body's size and its nesting
depth. Python's json parser recurses, so a body of a few kilobytes of `[` raises RecursionError (a 500)
unless the depth is capped; the API's requests are flat objects, so a small cap costs nothing."""
from __future__ import annotations

import asyncio
import json
import re
from contextlib import asynccontextmanager
from dataclasses import dataclass, field

from fastapi import Request

from mvp_core.errors import UserError

MAX_JSON_BYTES = 256 * 1024       # a curate request carries a state of a few hundred puzzle ids at most
MAX_JSON_DEPTH = 8                # {"state": {"back": ["id"]}} is depth 3


class BadBody(UserError):
    """The request body is not acceptable JSON; `status` is the HTTP code to answer with."""

    def __init__(self, msg: str, status: int = 400):
        super().__init__(msg)
        self.status = status


def json_depth(value) -> int:
    """Nesting depth of a parsed JSON value (a scalar is 0), walked without recursion."""
    depth, stack = 0, [(value, 1)]
    while stack:
        v, d = stack.pop()
        if isinstance(v, dict):
            v = list(v.values())
        if isinstance(v, list):
            depth = max(depth, d)
            stack.extend((x, d + 1) for x in v if isinstance(x, (dict, list)))
    return depth


def not_text(value) -> bool:
    """True if a string (value or key) holds a lone UTF-16 surrogate (JSON's "\\ud800") or a NUL:
    valid JSON, but SQLite's driver cannot encode the one and PostgreSQL refuses the other (a 500)."""
    stack = [value]
    while stack:
        v = stack.pop()
        if isinstance(v, str):
            if "\x00" in v:
                return True
            try:
                v.encode("utf-8")
            except UnicodeEncodeError:
                return True
        elif isinstance(v, dict):
            stack.extend(v.keys())
            stack.extend(v.values())
        elif isinstance(v, list):
            stack.extend(v)
    return False


def parse_json(raw: bytes, max_bytes: int = MAX_JSON_BYTES, max_depth: int = MAX_JSON_DEPTH):
    """The parsed body, or BadBody with one line (413 too large, 400 otherwise)."""
    if len(raw) > max_bytes:
        raise BadBody(f"bad request: the body is larger than {max_bytes // 1024} KiB", status=413)
    try:
        value = json.loads(raw)
    except RecursionError:
        raise BadBody(f"bad request: JSON nested deeper than {max_depth} levels") from None
    except ValueError:
        raise BadBody("bad request: the body is not valid JSON") from None
    if json_depth(value) > max_depth:
        raise BadBody(f"bad request: JSON nested deeper than {max_depth} levels")
    if not_text(value):
        raise BadBody("bad request: a string holds a NUL or a lone surrogate (\\u0000, \\ud800-\\udfff)")
    return value


async def read_json(request: Request, max_bytes: int = MAX_JSON_BYTES, max_depth: int = MAX_JSON_DEPTH):
    """Read and parse the request's body within the bounds; stops reading once it is too large."""
    declared = request.headers.get("content-length")
    if declared is not None and declared.isdigit() and int(declared) > max_bytes:
        raise BadBody(f"bad request: the body is larger than {max_bytes // 1024} KiB", status=413)
    chunks, size = [], 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > max_bytes:
            raise BadBody(f"bad request: the body is larger than {max_bytes // 1024} KiB", status=413)
        chunks.append(chunk)
    return parse_json(b"".join(chunks), max_bytes, max_depth)


# ---- every request: one size limit, enforced before the body is read ---------------------------------
# The app takes no file uploads; its largest legitimate bodies are the Train page's YAML config and
# Gradio's event payloads (kilobytes). Without a bound, one anonymous multipart upload to /login was
# parsed whole (~8.6x its size in memory) and Gradio's routes took any size (docs/security.md).
MAX_BODY_BYTES = 2 * 1024 * 1024
URLENCODED = "application/x-www-form-urlencoded"


class _TooLarge(Exception):
    """The body is refused (too large, or too slow): the answer was sent; the app is abandoned."""


def _one_line(status: int, text: str):
    body = (text + "\n").encode()
    return [{"type": "http.response.start", "status": status,
             "headers": [(b"content-type", b"text/plain; charset=utf-8"), (b"content-length", str(len(body)).encode()),
                         (b"connection", b"close")]},
            {"type": "http.response.body", "body": body}]


class BodyLimit:
    """Pure ASGI middleware around the whole app (Gradio's mounted pages included): a declared
    Content-Length over the limit is answered 413 without reading a byte; a chunked body is counted as it
    streams and cut off at the limit; a body that pauses over `body_timeout_s` between two chunks is
    answered 408 and the connection closed (a slow-loris body would hold its slot for ever); POST /login
    takes url-encoded forms only (415 otherwise)."""

    def __init__(self, app, limit: int = MAX_BODY_BYTES, body_timeout_s: float = 30.0):
        self.app, self.limit, self.body_timeout_s = app, limit, body_timeout_s

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        headers = dict(scope.get("headers") or [])
        declared = headers.get(b"content-length")
        if declared is not None:
            try:
                too_big = int(declared) > self.limit
            except ValueError:
                return await self._answer(send, 400, "bad Content-Length")
            if too_big:
                return await self._answer(send, 413, f"request body over {self.limit // 1024} KiB refused")
        if scope["method"] == "POST" and scope["path"] == "/login":
            ctype = headers.get(b"content-type", b"").split(b";")[0].strip().decode("latin-1").lower()
            if ctype != URLENCODED:
                return await self._answer(send, 415, "the login form is sent url-encoded; nothing else is read")
        seen, started, answered, body_done = 0, False, False, False

        async def counted_receive():
            nonlocal seen, answered, body_done
            if body_done:           # after the body, receive() waits for a disconnect: no deadline
                return await receive()
            try:
                msg = await asyncio.wait_for(receive(), self.body_timeout_s)
            except TimeoutError:
                if not started and not answered:
                    answered = True
                    await self._answer(send, 408, f"the request body paused over {self.body_timeout_s:g} s; "
                                                  "the connection is closed")
                raise _TooLarge from None
            if msg["type"] == "http.request":
                body_done = not msg.get("more_body", False)
                seen += len(msg.get("body", b""))
                if seen > self.limit:
                    if not started and not answered:    # say 413 now: the app may turn the abort into a 400
                        answered = True
                        await self._answer(send, 413, f"request body over {self.limit // 1024} KiB refused")
                    raise _TooLarge
            return msg

        async def tracked_send(msg):
            nonlocal started
            if answered:
                return                                   # the 413 is the answer; drop what the app says after
            if msg["type"] == "http.response.start":
                started = True
            await send(msg)

        try:
            await self.app(scope, counted_receive, tracked_send)
        except _TooLarge:
            pass

    @staticmethod
    async def _answer(send, status: int, text: str):
        for msg in _one_line(status, text):
            await send(msg)


# ---- every user: bounds on what is in flight at once ---------------------------------------------------
# The size limit above bounds one request; these bound one user's requests together. 40 parallel 2 MB
# bodies from one curator grew the server by 522 MB that the allocator never gave back (docs/security.md,
# "Requests in flight"). Gradio's long-lived event streams carry no body and wait on other requests, so
# they are not counted (else a page's own stream could hold the slot its events need).
STREAMS = re.compile(r"/gradio_api/(heartbeat/|queue/data$|stream/|call/)")


def body_cost(method: str, headers: dict[bytes, bytes], limit: int = MAX_BODY_BYTES) -> int:
    """The bytes a request may bring: its declared Content-Length, the size limit for a chunked body."""
    declared = headers.get(b"content-length")
    if declared is not None and declared.isdigit():
        return int(declared)
    return limit if method in ("POST", "PUT", "PATCH") and b"transfer-encoding" in headers else 0


@dataclass
class _Budget:
    requests: int = 0
    bytes: int = 0
    waiting: int = 0
    cond: asyncio.Condition = field(default_factory=asyncio.Condition)


class InFlight:
    """Per-key (a user, or an address when logged out) bounds on requests and body bytes in flight. A
    request over them waits for a slot up to `wait_s`; `slot` then yields False (the caller answers 429).
    A lone request always fits, whatever its size (the size limit bounds it)."""

    def __init__(self, max_requests: int, max_bytes: int, wait_s: float):
        self.max_requests, self.max_bytes, self.wait_s = max_requests, max_bytes, wait_s
        self._budgets: dict[str, _Budget] = {}

    def _fits(self, b: _Budget, cost: int) -> bool:
        return b.requests == 0 or (b.requests < self.max_requests and b.bytes + cost <= self.max_bytes)

    @asynccontextmanager
    async def slot(self, key: str, cost: int):
        b = self._budgets.setdefault(key, _Budget())
        async with b.cond:
            b.waiting += 1
            try:
                await asyncio.wait_for(b.cond.wait_for(lambda: self._fits(b, cost)), self.wait_s)
            except TimeoutError:
                ok = False
            else:
                ok = True
                b.requests += 1
                b.bytes += cost
            finally:
                b.waiting -= 1
        try:
            yield ok
        finally:
            async with b.cond:
                if ok:
                    b.requests -= 1
                    b.bytes -= cost
                    b.cond.notify_all()
                if b.requests == 0 and b.waiting == 0 and self._budgets.get(key) is b:
                    del self._budgets[key]


# ---- every user: the events they have queued ------------------------------------------------------------
# `InFlight` ends when Gradio's queue/join answers; the event then waits in the page's queue holding its
# payload until it has run, and nothing bounded how many of one user's events (up to 2 MiB each) wait
# there (docs/security.md, "Requests in flight"). Gradio bounds only the queue's length, for everyone
# together, so this bounds one user's queued bytes. Gradio (6.x) offers no hook for it: its Queue keeps
# the unfinished events in `event_ids_to_events` (an event leaves it when it has run or its session
# closed), each with the `username` the page's auth dependency gave and the `request` that joined it.
JOIN = re.compile(r"^/[^/]+/gradio_api/queue/join$")


class QueuedEvents:
    """Per-user bound on the body bytes of their unfinished Gradio events, across every page's queue. A join
    over it waits up to `wait_s` for the user's events to run (`room` then returns False: the caller
    answers 429). A user with nothing queued always gets room."""

    def __init__(self, max_bytes: int, wait_s: float, poll_s: float = 0.05):
        self.max_bytes, self.wait_s, self.poll_s = max_bytes, wait_s, poll_s
        self.pages: list = []            # each mounted page's gr.Blocks (app/web/server.py adds them)

    def queued(self, username: str) -> tuple[int, int]:
        """(events, body bytes) the user has joined that have not finished."""
        n = size = 0
        for blocks in self.pages:
            for event in list(blocks._queue.event_ids_to_events.values()):
                if event.username == username:
                    n += 1
                    scope = getattr(event.request, "scope", None) or {}
                    size += body_cost("POST", dict(scope.get("headers") or []))
        return n, size

    async def room(self, username: str, cost: int) -> bool:
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self.wait_s
        while True:
            n, size = self.queued(username)
            if n == 0 or size + cost <= self.max_bytes:
                return True
            if loop.time() >= deadline:
                return False
            await asyncio.sleep(self.poll_s)

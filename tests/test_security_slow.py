"""Slow clients are cut off (app/web/slow_clients.py, app/web/limits.py BodyLimit; docs/security.md
"Slow clients"): 20 connections trickling their headers a line at a time and 20 pausing mid-body are
all closed within their deadlines (here MVP_HEADER_TIMEOUT_S=2, MVP_BODY_TIMEOUT_S=2), the paused bodies
answered 408 (or 429 while their address's slots were full), and the server still answers."""
from __future__ import annotations

import os
import select
import socket
import time

import httpx
import pytest
from fixtures_security import Server
from fixtures_web import free_port

pytestmark = [pytest.mark.slow]


@pytest.fixture(scope="module")
def slow_server(tmp_path_factory):
    data = tmp_path_factory.mktemp("slow") / "data"
    data.mkdir()
    env = {"MVP_HEADER_TIMEOUT_S": "2", "MVP_BODY_TIMEOUT_S": "2"}
    os.environ.update(env)
    try:
        srv = Server(data, f"sqlite:///{data / 'mvp.sqlite'}", free_port(), data.parent / "serve.log").start()
    finally:
        for k in env:
            del os.environ[k]
    yield srv
    srv.stop()


def test_slow_headers_and_slow_bodies_are_cut_off(slow_server):
    port = int(slow_server.url.rsplit(":", 1)[1])
    heads, bodies = [], []
    for _ in range(20):
        s = socket.create_connection(("127.0.0.1", port))
        s.sendall(f"GET /login HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n".encode())
        heads.append(s)
    for _ in range(20):
        s = socket.create_connection(("127.0.0.1", port))
        s.sendall(f"POST /login HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nContent-Type: application/x-www-form-urlencoded"
                  "\r\nContent-Length: 1000\r\n\r\nusername=slow".encode())
        bodies.append(s)
    answers: dict[socket.socket, bytes] = {}
    deadline = time.monotonic() + 60                 # far beyond the 2 s deadlines (and the 10 s slot wait)
    while len(answers) < 40 and time.monotonic() < deadline:
        for s in heads:
            if s not in answers:
                try:
                    s.sendall(b"X-Slow: 1\r\n")      # a header line now and then: never complete
                except OSError:
                    answers[s] = b""
        ready, _, _ = select.select([s for s in heads + bodies if s not in answers], [], [], 0.5)
        for s in ready:
            try:
                answers[s] = s.recv(65536)           # an answer or a close: the server let go of it
            except OSError:
                answers[s] = b""
    for s in heads + bodies:
        s.close()
    assert all(s in answers for s in heads), f"{sum(s not in answers for s in heads)} slow-header connections held open"
    assert all(s in answers for s in bodies), f"{sum(s not in answers for s in bodies)} slow-body connections held open"
    codes = {answers[s].split(b" ", 2)[1] for s in bodies if answers[s]}
    assert codes <= {b"408", b"429"} and b"408" in codes, codes
    assert httpx.get(slow_server.url + "/login", timeout=30).status_code == 200

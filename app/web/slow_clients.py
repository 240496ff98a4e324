"""A deadline for a request's headers (docs/security.md, "Slow clients"). uvicorn has none: its
keep-alive timeout covers idle time between requests and is reset by every byte received, so a client
sending one header byte a second holds its connection (and a slot of the server's) for ever. An ASGI
middleware cannot help, as it runs only once the headers are complete, so this is uvicorn's h11
protocol with a timer: armed when a connection opens and after each response, disarmed once a
request's headers are parsed; if it fires first, the connection is closed. Body pauses are bounded in
ASGI (app/web/limits.py BodyLimit)."""
from __future__ import annotations

import asyncio

import h11
from uvicorn.protocols.http.h11_impl import H11Protocol


class HeaderDeadline(H11Protocol):
    """uvicorn's h11 protocol, closing a connection whose request headers take over `header_timeout_s`."""
    header_timeout_s = 10.0
    _deadline: asyncio.TimerHandle | None = None

    def connection_made(self, transport) -> None:   # type: ignore[override]
        super().connection_made(transport)
        self._arm()

    def on_response_complete(self) -> None:
        super().on_response_complete()
        if not self.transport.is_closing():
            self._arm()

    def handle_events(self) -> None:
        super().handle_events()
        if self.conn.their_state is not h11.IDLE:     # a request's headers arrived
            self._disarm()

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm()
        super().connection_lost(exc)

    def _arm(self) -> None:
        self._disarm()
        self._deadline = self.loop.call_later(self.header_timeout_s, self._expire)

    def _disarm(self) -> None:
        if self._deadline is not None:
            self._deadline.cancel()
            self._deadline = None

    def _expire(self) -> None:
        self._deadline = None
        if self.conn.their_state is h11.IDLE and not self.transport.is_closing():
            self.transport.close()


def header_deadline(seconds: float) -> type[HeaderDeadline]:
    """The protocol class for `uvicorn.run(http=...)` with this deadline."""
    return type("HeaderDeadlineProtocol", (HeaderDeadline,), {"header_timeout_s": seconds})

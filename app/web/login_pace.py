"""Failed logins per client address, kept in this process's memory (docs/security.md, "Logins").

An address over its allowance of failures is slowed, not locked: its further attempts wait
`LOGIN_SLOW_S` before the password is checked, and a failure then answers 429, but a user who gives
the right password still gets in. Every local client, and every client behind a proxy that is not
trusted, shares one address, so a hard per-address lock would let anyone lock the owners out by
guessing unknown names. Guesses on one name stay capped per (name, address) in the database
(`db.users.sessions.count_attempt`)."""
from __future__ import annotations

import threading
import time
from collections import OrderedDict, deque

MAX_ADDRESSES = 10_000          # the oldest address is forgotten beyond this: memory stays bounded


class AddressPace:
    """Failures per address within a sliding window."""

    def __init__(self, allowance: int, window_s: float):
        self.allowance, self.window_s = allowance, window_s
        self._fails: OrderedDict[str, deque[float]] = OrderedDict()
        self._lock = threading.Lock()

    def _recent(self, addr: str, now: float) -> deque[float]:
        q = self._fails.get(addr)
        if q is None:
            return deque()
        while q and q[0] <= now - self.window_s:
            q.popleft()
        return q

    def slowed(self, addr: str) -> float:
        """0 if `addr` is within its allowance, else seconds until its oldest counted failure expires."""
        now = time.monotonic()
        with self._lock:
            q = self._recent(addr, now)
            return 0.0 if len(q) < self.allowance else max(1.0, q[0] + self.window_s - now)

    def failed(self, addr: str) -> None:
        now = time.monotonic()
        with self._lock:
            q = self._recent(addr, now)
            q.append(now)
            while len(q) > self.allowance:       # more than the allowance tells nothing new
                q.popleft()
            self._fails[addr] = q
            self._fails.move_to_end(addr)
            while len(self._fails) > MAX_ADDRESSES:
                self._fails.popitem(last=False)

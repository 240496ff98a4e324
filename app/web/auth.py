"""Login, sessions and roles for the web app.

Passwords are checked by `db.users.verify` (argon2id). A successful login gets a random session token
in an HttpOnly cookie; the token maps to the user *name* only, and the role is re-read from the
database (cached for `ROLE_TTL_S`), so an admin's role change or deletion takes effect without a new
login. Failed logins are slowed: each failure for a name or a client address doubles the wait before
the next answer (capped), so guessing passwords online is impractically slow.

Sessions live in this process's memory: a restart logs everyone out (acceptable for one server; a
multi-process deployment would move them into the database)."""
from __future__ import annotations

import asyncio
import secrets
import threading
import time
from dataclasses import dataclass, field

from sqlalchemy.orm import sessionmaker

from db.models.curation import ROLES

COOKIE = "mvp_session"
SESSION_TTL_S = 12 * 3600          # a login lasts one working day
ROLE_TTL_S = 5.0                   # how stale a cached role may be
THROTTLE_BASE_S = 0.25             # wait after the first failure; doubles with each further one
THROTTLE_MAX_S = 8.0
THROTTLE_FORGET_S = 15 * 60        # failures older than this no longer count


# Which roles may open each page (and call its endpoints). Curation is open to every role.
PAGE_ROLES: dict[str, frozenset[str]] = {
    "curate": frozenset(ROLES),
    "rollouts": frozenset({"researcher", "admin"}),
    "stats": frozenset({"researcher", "admin"}),
    "train": frozenset({"researcher", "admin"}),
    "admin": frozenset({"admin"}),
}
PAGE_TITLES = {"curate": "Curate", "rollouts": "Rollouts", "stats": "Stats", "train": "Train",
               "admin": "Admin"}


class Forbidden(Exception):
    """Raised by a handler when the caller's role may not do what it asked."""


@dataclass
class _Session:
    name: str
    created: float


@dataclass
class _Failures:
    count: int = 0
    last: float = 0.0


@dataclass
class Auth:
    """Everything the app needs to know who is calling: sessions, cached roles, login throttling."""
    Session: sessionmaker
    _sessions: dict[str, _Session] = field(default_factory=dict)
    _roles: dict[str, tuple[str | None, int | None, float]] = field(default_factory=dict)
    _fails: dict[str, _Failures] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    # ---- login / logout ---------------------------------------------------------------------

    def _penalty(self, keys: list[str]) -> float:
        now = time.monotonic()
        worst = 0
        with self._lock:
            for k in keys:
                f = self._fails.get(k)
                if f and now - f.last < THROTTLE_FORGET_S:
                    worst = max(worst, f.count)
        return 0.0 if worst == 0 else min(THROTTLE_MAX_S, THROTTLE_BASE_S * 2 ** (worst - 1))

    def _fail(self, keys: list[str]) -> None:
        now = time.monotonic()
        with self._lock:
            for k in keys:
                f = self._fails.setdefault(k, _Failures())
                if now - f.last >= THROTTLE_FORGET_S:
                    f.count = 0
                f.count += 1
                f.last = now

    async def login(self, name: str, password: str, client: str) -> str | None:
        """A new session token, or None after a (throttled) failure."""
        from db.users import verify
        keys = [f"user:{name}", f"addr:{client}"]
        delay = self._penalty(keys)
        if delay:
            await asyncio.sleep(delay)       # the caller waits; the server does not block others

        def check():
            with self.Session() as s:
                user = verify(s, name, password)
                if user is not None:
                    s.commit()               # verify may have upgraded the hash
                return None if user is None else user.name
        ok_name = await asyncio.to_thread(check) if name and password else None
        if ok_name is None:
            self._fail(keys)
            await asyncio.sleep(THROTTLE_BASE_S)
            return None
        with self._lock:
            for k in keys:
                self._fails.pop(k, None)
            token = secrets.token_urlsafe(32)
            self._sessions[token] = _Session(name=ok_name, created=time.time())
            self._roles.pop(ok_name, None)
        return token

    def logout(self, token: str | None) -> None:
        if token:
            with self._lock:
                self._sessions.pop(token, None)

    # ---- who is calling ---------------------------------------------------------------------

    def user_of_token(self, token: str | None) -> str | None:
        if not token:
            return None
        with self._lock:
            s = self._sessions.get(token)
            if s is None:
                return None
            if time.time() - s.created > SESSION_TTL_S:
                del self._sessions[token]
                return None
            return s.name

    def role_of(self, name: str | None) -> str | None:
        return self.identity(name)[0]

    def user_id(self, name: str | None) -> int | None:
        return self.identity(name)[1]

    def identity(self, name: str | None) -> tuple[str | None, int | None]:
        """(role, user id) of a user name, from the database (cached briefly); (None, None) if unknown."""
        if not name:
            return None, None
        now = time.monotonic()
        hit = self._roles.get(name)
        if hit and now - hit[2] < ROLE_TTL_S:
            return hit[0], hit[1]
        from db.users import get_user
        with self.Session() as s:
            u = get_user(s, name)
            role, uid = (u.role, u.id) if u is not None else (None, None)
        self._roles[name] = (role, uid, now)
        return role, uid

    def forget_role(self, name: str) -> None:
        self._roles.pop(name, None)

    def user_for_page(self, token: str | None, page: str) -> str | None:
        """The user name if this session may open `page`, else None."""
        name = self.user_of_token(token)
        return name if name and self.role_of(name) in PAGE_ROLES[page] else None

    def require(self, name: str | None, page: str) -> int:
        """Server-side role check for a handler of `page`: the caller's user id, or Forbidden."""
        role, uid = self.identity(name)
        if role not in PAGE_ROLES[page] or uid is None:
            raise Forbidden(f"{name or 'anonymous'} may not use the {page} page")
        return uid

    def pages_for(self, name: str | None) -> list[str]:
        role = self.role_of(name)
        return [p for p, roles in PAGE_ROLES.items() if role in roles]

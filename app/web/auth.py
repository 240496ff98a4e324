"""Login, sessions and roles for the web app (docs/web.md, "Sessions and login").

Sessions live in the database (`db.users.sessions`): the browser holds a random token in an HttpOnly
cookie, the table its sha256, so a restart keeps users logged in, several server processes share the
sessions, and logout or a password/role change (`db.users.accounts`) ends them everywhere. Every request reads
its session row (a primary-key read on a deferred, read-only transaction: it never waits on writers).

Login throttling, two rules (docs/security.md, "Logins"). Per (name, address), counted in the
database before the password is checked: an attempt over `LOGIN_PER_NAME` within `LOGIN_WINDOW_S` is
answered 429 without checking anything, so parallel requests cannot all slip through on one stale
count; a successful login does not count. Per address, in memory (app/web/login_pace.py): over
`LOGIN_PER_ADDR` failures an address is slowed (`LOGIN_SLOW_S` before each check, failures answered
429), never refused a right password, so guesses at unknown names from a shared address (every local
client, everyone behind an untrusted proxy) cannot lock the owners out. Unknown user names cost the
same argon2 hash as known ones (`db.users.accounts.authenticate`)."""
from __future__ import annotations

import asyncio
import threading
import time
from dataclasses import dataclass, field

from sqlalchemy.orm import sessionmaker

from app.web.login_pace import AddressPace
from app.web.pages import PAGES

COOKIE = "mvp_session"
SESSION_TTL_S = 12 * 3600          # a login lasts one working day
ROLE_TTL_S = 5.0                   # how stale a cached role may be for Gradio handlers (by user name)
LOGIN_WINDOW_S = 60.0              # the throttle counts the attempts of the last minute ...
LOGIN_PER_NAME = 5                 # ... at most this many failed guesses per (user name, address) ...
LOGIN_PER_ADDR = 20                # ... and this many per client address (any names) before it is slowed
LOGIN_SLOW_S = 2.0                 # what a slowed address waits before each check


# Which roles may open each page (and call its endpoints), from the one page registry.
PAGE_ROLES: dict[str, frozenset[str]] = {p.path: p.roles for p in PAGES}


class Forbidden(Exception):
    """Raised by a handler when the caller's role may not do what it asked."""


@dataclass(frozen=True)
class LoginResult:
    token: str | None = None           # the new session's token, on success
    retry_after_s: float = 0.0         # > 0: refused by the throttle, nothing was checked


def throttle_keys(name: str, client: str) -> dict[str, int]:
    """{key: allowance} counted in the database: per (name, address), so an outsider guessing at a name
    from elsewhere never locks its owner out (`mvp users unlock` forgets a name's attempts)."""
    from db.users.sessions import name_key
    return {f"{name_key(name)}@{client[:90]}": LOGIN_PER_NAME}


@dataclass
class Auth:
    """Everything the app needs to know who is calling: sessions, cached roles, login throttling."""
    Session: sessionmaker
    _roles: dict[str, tuple[str | None, int | None, float]] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _pace: AddressPace = field(default_factory=lambda: AddressPace(LOGIN_PER_ADDR, LOGIN_WINDOW_S))

    def __post_init__(self):
        from db.engine import read_engine
        self._Read = sessionmaker(read_engine(self.Session.kw["bind"]))

    # ---- login / logout ---------------------------------------------------------------------

    async def login(self, name: str, password: str, client: str) -> LoginResult:
        """A new session, a throttle refusal, or (LoginResult()) a wrong name or password."""
        slowed = self._pace.slowed(client)
        if slowed:
            await asyncio.sleep(LOGIN_SLOW_S)
        res = await asyncio.to_thread(self._login, name, password, client)
        if res.token is None and not res.retry_after_s:
            self._pace.failed(client)
            if slowed:
                return LoginResult(retry_after_s=slowed)
        return res

    def _login(self, name: str, password: str, client: str) -> LoginResult:
        from db.users.accounts import authenticate
        from db.users.sessions import count_attempt, create_session, refund_attempt, retry_after_s
        limits = throttle_keys(name, client)
        with self.Session() as s:
            blocked, ids = count_attempt(s, limits, LOGIN_WINDOW_S)
            if blocked is not None:
                return LoginResult(retry_after_s=max(1.0, retry_after_s(s, blocked, LOGIN_WINDOW_S)))
            found = authenticate(s, name, password) if len(password) <= 1024 else None
            if found is None:
                return LoginResult()
            refund_attempt(s, ids)
            token = create_session(s, found[0], SESSION_TTL_S)
        self.forget_role(found[1])
        return LoginResult(token=token)

    def logout(self, token: str | None) -> None:
        from db.users.sessions import end_session
        with self.Session() as s:
            end_session(s, token)

    # ---- who is calling ---------------------------------------------------------------------

    def session_of(self, token: str | None):
        """The `db.users.sessions.SessionUser` of a live session token, else None."""
        from db.users.sessions import session_user
        if not token:
            return None
        with self._Read() as s:
            return session_user(s, token)

    def role_of(self, name: str | None) -> str | None:
        return self.identity(name)[0]

    def user_id(self, name: str | None) -> int | None:
        return self.identity(name)[1]

    def identity(self, name: str | None) -> tuple[str | None, int | None]:
        """(role, user id) of a user name, from the database (cached briefly); (None, None) if unknown
        or disabled."""
        if not name:
            return None, None
        now = time.monotonic()
        hit = self._roles.get(name)
        if hit and now - hit[2] < ROLE_TTL_S:
            return hit[0], hit[1]
        from db.users.accounts import get_user
        with self._Read() as s:
            u = get_user(s, name)
            role, uid = (u.role, u.id) if u is not None and not u.disabled else (None, None)
        with self._lock:
            self._roles[name] = (role, uid, now)
        return role, uid

    def forget_role(self, name: str) -> None:
        with self._lock:
            self._roles.pop(name, None)

    def require(self, name: str | None, page: str) -> int:
        """Server-side role check for a handler of `page`: the caller's user id, or Forbidden."""
        role, uid = self.identity(name)
        if role not in PAGE_ROLES[page] or uid is None:
            raise Forbidden(f"{name or 'anonymous'} may not use the {page} page")
        return uid

    def pages_for(self, name: str | None) -> list[str]:
        role = self.role_of(name)
        return [p for p, roles in PAGE_ROLES.items() if role in roles]

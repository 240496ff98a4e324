"""Web sessions and the login throttle, stored in the database (tables in db/models/auth.py).

Sessions: the browser holds a random token; the table holds its sha256, the user and the expiry. Every
request looks the token up (a primary-key read), so logout, a password change or a role change
(`db.users.accounts`) ends the session in every server process at once.

Throttle: before a password is checked, the attempt is recorded against each of its keys (the user
name with the client address, the address alone) in the same transaction that counts the recent attempts; an attempt over the
limit is refused without checking the password. Counting and recording are serialised per key
(PostgreSQL: an advisory transaction lock per key; SQLite: BEGIN IMMEDIATE serialises all writers), so
parallel requests cannot all read the same count."""
from __future__ import annotations

import unicodedata

import hashlib
import secrets
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone

from sqlalchemy import delete, func, select, text
from sqlalchemy.orm import Session

from db.models.auth import LoginAttempt, WebSession
from db.models.base import utcnow
from db.models.curation import User
from db.txn import run_txn


@dataclass(frozen=True)
class SessionUser:
    """Who a session token belongs to, as of this request."""
    user_id: int
    name: str
    role: str


def token_hash(token: str) -> str:
    return hashlib.sha256(token.encode("utf-8", "replace")).hexdigest()


def _aware(dt: datetime) -> datetime:
    return dt if dt.tzinfo is not None else dt.replace(tzinfo=timezone.utc)   # SQLite drops the zone


def create_session(session: Session, user_id: int, ttl_s: float) -> str:
    """A new session for the user; returns the token (shown to the browser once, stored hashed).
    Expired sessions of everyone are removed on the way."""
    token = secrets.token_urlsafe(32)
    now = utcnow()

    def txn():
        session.execute(delete(WebSession).where(WebSession.expires_at < now))
        session.add(WebSession(token_hash=token_hash(token), user_id=user_id, created_at=now,
                               expires_at=now + timedelta(seconds=ttl_s)))
    run_txn(session, txn)
    return token


def session_user(session: Session, token: str | None) -> SessionUser | None:
    """The user a live session token belongs to, else None (unknown, revoked, expired, or the account
    disabled: disabling also deletes the sessions; this is the second line)."""
    if not token or len(token) > 200:
        return None
    row = session.execute(
        select(WebSession.expires_at, User.id, User.name, User.role)
        .join(User, User.id == WebSession.user_id)
        .where(WebSession.token_hash == token_hash(token), User.disabled.is_(False))).first()
    if row is None or _aware(row.expires_at) <= utcnow():
        return None
    return SessionUser(row.id, row.name, row.role)


def end_session(session: Session, token: str | None) -> None:
    if token:
        run_txn(session, lambda: session.execute(delete(WebSession).where(
            WebSession.token_hash == token_hash(token))))


def name_key(name: str) -> str:
    """The throttle key prefix of a user name: compared case- and normalisation-blind, so "Ada" and "ada"
    share one allowance whatever the database's collation. A login attempt counts against
    "<name_key>@<address>" (app/web/auth.py), so guesses from one address never lock out another."""
    return "user:" + unicodedata.normalize("NFC", name).casefold()[:100]


def unlock(session: Session, name: str) -> int:
    """Forget the failed login attempts counted against `name` (from every address): the admin's unlock.
    Returns how many were forgotten."""
    key = name_key(name)

    def txn():
        return session.execute(delete(LoginAttempt).where(
            (LoginAttempt.key == key) | LoginAttempt.key.startswith(key + "@", autoescape=True))).rowcount
    return run_txn(session, txn)


def count_attempt(session: Session, limits: dict[str, int], window_s: float) -> tuple[str | None, list[int]]:
    """Record one login attempt against each key of `limits` ({key: attempts allowed per window}),
    unless one key already had its allowance within the last `window_s` seconds: then record nothing
    and return (that key, []). Else (None, the attempt ids): the attempt may go on to the password
    check, and a successful login hands its ids to `refund_attempt`."""
    keys = sorted(limits)

    def txn():
        now = utcnow()
        since = now - timedelta(seconds=window_s)
        if session.get_bind().dialect.name == "postgresql":
            for k in keys:   # in sorted order, so two attempts never wait on each other's locks
                session.execute(text("SELECT pg_advisory_xact_lock(hashtext(:k))"), {"k": "mvp-login:" + k})
        for k in keys:
            n = session.scalar(select(func.count()).select_from(LoginAttempt)
                               .where(LoginAttempt.key == k, LoginAttempt.at > since))
            if n >= limits[k]:
                return k, []
        rows = [LoginAttempt(key=k, at=now) for k in keys]
        session.add_all(rows)
        session.execute(delete(LoginAttempt).where(LoginAttempt.key.in_(keys), LoginAttempt.at <= since))
        session.flush()
        return None, [r.id for r in rows]
    return run_txn(session, txn)


def refund_attempt(session: Session, ids: list[int]) -> None:
    """A login that succeeded does not count against its keys: only failed guesses do."""
    if ids:
        run_txn(session, lambda: session.execute(delete(LoginAttempt).where(LoginAttempt.id.in_(ids))))


def retry_after_s(session: Session, key: str, window_s: float) -> float:
    """Seconds until the oldest attempt of `key` in the window leaves it."""
    since = utcnow() - timedelta(seconds=window_s)
    oldest = session.scalar(select(func.min(LoginAttempt.at)).where(LoginAttempt.key == key,
                                                                     LoginAttempt.at > since))
    if oldest is None:
        return 0.0
    return max(0.0, (_aware(oldest) - since).total_seconds())

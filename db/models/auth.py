"""Web-login tables: sessions and login attempts, kept in the database so that a restart keeps users
logged in, two server processes share both, and a revocation (logout, password or role change) takes
effect everywhere at once (docs/web.md, "Sessions and login").

A session row holds only the sha256 of its token: a copy of the database (a backup, an export) does not
let anyone log in. Login attempts are rows per throttle key (a user name or a client address), written
before the password is checked, so parallel guesses count each other."""
from __future__ import annotations

from datetime import datetime

from sqlalchemy import DateTime, ForeignKey, Index, String
from sqlalchemy.orm import Mapped, mapped_column

from db.models.base import Base, BigId, utcnow


class WebSession(Base):
    """One login: who, since when, until when. Deleted on logout and when the user's password or role
    changes (`db.users.accounts`), or once expired."""
    __tablename__ = "web_sessions"
    token_hash: Mapped[str] = mapped_column(String(64), primary_key=True)   # sha256 hex of the cookie value
    user_id: Mapped[int] = mapped_column(ForeignKey("users.id", ondelete="CASCADE"), index=True)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)
    expires_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), index=True)


class LoginAttempt(Base):
    """One login attempt counted against one throttle key ("user:<name>@<ip>" or "addr:<ip>")."""
    __tablename__ = "login_attempts"
    id: Mapped[int] = mapped_column(BigId, primary_key=True, autoincrement=True)
    key: Mapped[str] = mapped_column(String(200))
    at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)
    __table_args__ = (Index("ix_login_attempts_key_at", "key", "at"),)

"""Users and passwords (argon2id via argon2-cffi). Roles: curator, researcher, admin."""
from __future__ import annotations

import secrets

from argon2 import PasswordHasher
from argon2.exceptions import InvalidHashError, VerificationError
from sqlalchemy import select
from sqlalchemy.orm import Session

from db.models.curation import ROLES, User
from mvp_core.errors import UserError

_hasher = PasswordHasher()   # argon2-cffi's defaults (argon2id, RFC 9106 low-memory profile)


def hash_password(password: str) -> str:
    return _hasher.hash(password)


def add_user(session: Session, name: str, role: str = "curator", password: str | None = None) -> tuple[User, str]:
    """Create a user; returns (user, password). Without a password a random one is made (and returned
    once, so the CLI can print it). The caller commits."""
    name = (name or "").strip()
    if not name or len(name) > 64:
        raise UserError("user name must be 1-64 characters")
    if role not in ROLES:
        raise UserError(f"unknown role {role!r}; choose one of {', '.join(ROLES)}")
    if session.scalar(select(User.id).where(User.name == name)) is not None:
        raise UserError(f"user {name!r} already exists")
    password = password or secrets.token_urlsafe(12)
    user = User(name=name, role=role, password_hash=hash_password(password))
    session.add(user)
    session.flush()
    return user, password


def get_user(session: Session, name: str) -> User | None:
    return session.scalar(select(User).where(User.name == name))


def verify(session: Session, name: str, password: str) -> User | None:
    """The user if the password is right, else None (also for unknown users)."""
    user = get_user(session, name)
    if user is None:
        return None
    try:
        _hasher.verify(user.password_hash, password)
    except (VerificationError, InvalidHashError):
        return None
    if _hasher.check_needs_rehash(user.password_hash):   # parameters got stronger since
        user.password_hash = hash_password(password)
    return user


def set_password(session: Session, name: str, password: str) -> None:
    user = get_user(session, name)
    if user is None:
        raise UserError(f"no user named {name!r}")
    user.password_hash = hash_password(password)


def list_users(session: Session) -> list[dict]:
    return [{"id": u.id, "name": u.name, "role": u.role, "created_at": u.created_at}
            for u in session.scalars(select(User).order_by(User.name))]

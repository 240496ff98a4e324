"""Users and passwords (argon2id via argon2-cffi). Roles: curator, researcher, admin.

The one validation of user names and passwords lives here (`check_name`, `check_password`); every path
that creates a user or changes a password or role goes through `add_user` / `set_password` /
`set_role` (the `mvp users` CLI, the admin page, `mvp demo`), and a password or role change revokes
the user's web sessions, as disabling (`set_disabled`) or deleting (`delete_user`) an account does. `authenticate` costs one argon2 hash whether or not the user exists, so the
answer time does not tell which names exist (docs/web.md, "Sessions and login")."""
from __future__ import annotations

import secrets
import unicodedata

from argon2 import PasswordHasher
from argon2.exceptions import InvalidHashError, VerificationError
from sqlalchemy import delete, func, select, update
from sqlalchemy.orm import Session

from db.models.auth import WebSession
from db.models.curation import ROLES, CuratedSet, Lease, OptionVerdict, PuzzleVerdict, User, VerdictEvent
from db.models.human import HumanAnswer
from db.txn import run_txn
from mvp_core.errors import UserError

_hasher = PasswordHasher()   # argon2-cffi's defaults (argon2id, RFC 9106 low-memory profile)
NAME_MAX = 64
PASSWORD_MIN = 10            # NIST SP 800-63B asks for at least 8; one policy for every path
PASSWORD_MAX = 256           # long enough for any passphrase, short enough to hash cheaply
# Unicode categories a user name may not contain: controls (NUL, tab, newline), format characters
# (bidi overrides such as U+202E, zero-width joiners), surrogates, private use, unassigned, and
# line/paragraph separators. Plain spaces are allowed inside a name, not at its ends.
_BAD_CATEGORIES = {"Cc", "Cf", "Cs", "Co", "Cn", "Zl", "Zp"}
# A valid argon2 hash of a random password: verified against when the user does not exist.
_DUMMY_HASH = _hasher.hash(secrets.token_urlsafe(16))


def check_name(name) -> str:
    """The user name, NFC-normalised, or UserError with the one thing wrong with it."""
    if not isinstance(name, str):
        raise UserError("user name must be text")
    name = unicodedata.normalize("NFC", name)
    if not name or len(name) > NAME_MAX:
        raise UserError(f"user name must be 1-{NAME_MAX} characters")
    for ch in name:
        if unicodedata.category(ch) in _BAD_CATEGORIES or (ch.isspace() and ch != " "):
            raise UserError(f"user name may not contain control, formatting or bidi characters "
                            f"(found U+{ord(ch):04X})")
    if name != name.strip(" "):
        raise UserError("user name may not start or end with a space")
    return name


def check_password(password, name: str | None = None) -> str:
    """The password, or UserError: PASSWORD_MIN-PASSWORD_MAX characters, not the user name."""
    if not isinstance(password, str) or not password:
        raise UserError("empty password")
    if len(password) < PASSWORD_MIN:
        raise UserError(f"a password needs at least {PASSWORD_MIN} characters")
    if len(password) > PASSWORD_MAX:
        raise UserError(f"a password may have at most {PASSWORD_MAX} characters")
    if "\x00" in password:
        raise UserError("a password may not contain NUL characters")
    if name is not None and password.casefold() == name.casefold():
        raise UserError("the password may not be the user name")
    return password


def hash_password(password: str) -> str:
    return _hasher.hash(password)


def add_user(session: Session, name: str, role: str = "curator", password: str | None = None) -> tuple[User, str]:
    """Create a user; returns (user, password). Without a password a random one is made (and returned
    once, so the CLI can print it). The caller commits."""
    name = check_name(name)
    if role not in ROLES:
        raise UserError(f"unknown role {role!r}; choose one of {', '.join(ROLES)}")
    if session.scalar(select(User.id).where(User.name == name)) is not None:
        raise UserError(f"user {name!r} already exists")
    password = check_password(password, name) if password else secrets.token_urlsafe(12)
    user = User(name=name, role=role, password_hash=hash_password(password))
    session.add(user)
    session.flush()
    return user, password


def get_user(session: Session, name: str) -> User | None:
    return session.scalar(select(User).where(User.name == name))


def _existing(session: Session, name: str) -> User:
    # a name add_user would refuse cannot exist: say what is wrong with it (a lone surrogate
    # used to reach the driver, whose encoding error was shown raw)
    name = check_name(name)
    user = get_user(session, name)
    if user is None:
        raise UserError(f"no user named {name!r}")
    return user


def authenticate(session: Session, name: str, password: str) -> tuple[int, str] | None:
    """(user id, name) if the password is right, else None (after the same work for unknown names).
    The argon2 check runs with no transaction open: on SQLite every transaction holds the write lock
    (BEGIN IMMEDIATE), and a hash inside one made 20 simultaneous logins queue behind each other's
    hashes, long enough under load for a login, or a curator's verdict, to pass the busy timeout."""
    row = session.execute(select(User.id, User.name, User.password_hash, User.disabled)
                          .where(User.name == name)).first() if name else None
    session.rollback()                       # end the read before the slow hash
    try:
        _hasher.verify(row.password_hash if row is not None else _DUMMY_HASH, password)
    except (VerificationError, InvalidHashError):
        return None
    if row is None or row.disabled:
        return None
    if _hasher.check_needs_rehash(row.password_hash):   # parameters got stronger since
        new = hash_password(password)
        run_txn(session, lambda: session.execute(update(User).where(
            User.id == row.id, User.password_hash == row.password_hash).values(password_hash=new)))
    return row.id, row.name


def revoke_sessions(session: Session, user_id: int) -> int:
    """Log the user out everywhere (every server process): delete their web sessions."""
    return session.execute(delete(WebSession).where(WebSession.user_id == user_id)).rowcount or 0


def set_password(session: Session, name: str, password: str) -> None:
    """Change the password and revoke the user's sessions. The caller commits."""
    user = _existing(session, name)
    user.password_hash = hash_password(check_password(password, user.name))
    revoke_sessions(session, user.id)


def set_role(session: Session, name: str, role: str) -> None:
    """Change the role and revoke the user's sessions (they log in again under the new role)."""
    if role not in ROLES:
        raise UserError(f"unknown role {role!r}; choose one of {', '.join(ROLES)}")
    user = _existing(session, name)
    if user.role != role:
        user.role = role
        revoke_sessions(session, user.id)


def _other_enabled_admins(session: Session, user: User) -> int:
    return session.scalar(select(func.count()).select_from(User).where(
        User.role == "admin", User.disabled.is_(False), User.id != user.id)) or 0


def set_disabled(session: Session, name: str, disabled: bool) -> bool:
    """Disable (no login; every session ends at once) or enable an account. Its work stays, attributed.
    The last enabled admin cannot be disabled (nobody could manage users any more). Returns whether
    anything changed. The caller commits."""
    user = _existing(session, name)
    if disabled and user.role == "admin" and not user.disabled and not _other_enabled_admins(session, user):
        raise UserError(f"{user.name} is the only enabled admin; make another admin first")
    changed = user.disabled != disabled
    user.disabled = disabled
    if disabled:
        revoke_sessions(session, user.id)
    return changed


# The tables whose rows are a user's work: an account with any of them is disabled, never deleted.
_WORK = (("verdicts", PuzzleVerdict.user_id), ("distractor verdicts", OptionVerdict.user_id),
         ("verdict history entries", VerdictEvent.user_id), ("blind answers", HumanAnswer.user_id),
         ("curated sets", CuratedSet.created_by))


def delete_user(session: Session, name: str) -> None:
    """Delete an account that has no stored work (its sessions and leases go with it). An account with
    verdicts, answers or sets is refused with one line: disable it instead, so nothing stored is lost
    or left pointing at nobody. The last enabled admin cannot be deleted. The caller commits."""
    user = _existing(session, name)
    if user.role == "admin" and not user.disabled and not _other_enabled_admins(session, user):
        raise UserError(f"{user.name} is the only enabled admin; make another admin first")
    work = [(what, n) for what, col in _WORK
            if (n := session.scalar(select(func.count()).where(col == user.id)) or 0)]
    if work:
        shown = ", ".join(f"{n} {what}" for what, n in work)
        raise UserError(f"{user.name} has stored work ({shown}); disable the account instead")
    revoke_sessions(session, user.id)
    session.execute(delete(Lease).where(Lease.user_id == user.id))
    session.delete(user)
    session.flush()


def list_users(session: Session) -> list[dict]:
    return [{"id": u.id, "name": u.name, "role": u.role, "created_at": u.created_at, "disabled": u.disabled}
            for u in session.scalars(select(User).order_by(User.name))]

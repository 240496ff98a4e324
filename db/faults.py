"""Storage faults said in one line (docs/security.md, "Disk full and read-only", "Faults"): a full disk
or a read-only data folder, whether SQLite, PostgreSQL or a plain file write ran into it, and a
database found damaged while the server runs. The web server answers such a request with this line
(and logs it) instead of a bare 500; the transaction that hit it was rolled back whole (db/txn.py), so
nothing is half-written."""
from __future__ import annotations

import errno
import os

FULL = "the disk of the data folder is full: nothing was saved; free some space, then try again"
READ_ONLY = "the data folder is read-only: nothing was saved; make it writable, then try again"
IO = "the disk of the data folder failed to read or write (I/O error): nothing was saved"
_FULL_ERRNOS = {errno.ENOSPC, errno.EDQUOT}
_SQLITE_TEXT = {"database or disk is full": FULL, "attempt to write a readonly database": READ_ONLY,
                "disk i/o error": IO}
_PG_STATES = {"53100": FULL, "25006": READ_ONLY}        # disk_full, read_only_sql_transaction
DAMAGED = ("the database is damaged ({what}): nothing was saved, and the server takes no changes until an "
           "admin restores it from a backup (docs/store.md, \"Backups\") and restarts the server")
_SQLITE_CORRUPT = {11, 26}                               # SQLITE_CORRUPT, SQLITE_NOTADB (primary codes)
_PG_CORRUPT = {"XX001": "data_corrupted", "XX002": "index_corrupted"}


def _chain(exc: BaseException):
    """`exc` and every exception it was raised from or wraps (a driver's error under SQLAlchemy's)."""
    seen, todo = set(), [exc]
    while todo:
        e = todo.pop()
        if e is None or id(e) in seen:
            continue
        seen.add(id(e))
        yield e
        todo += [getattr(e, "orig", None), e.__cause__, e.__context__]


def corruption(exc: BaseException) -> str | None:
    """The one line for a damaged database anywhere in `exc`'s chain (SQLite's "database disk image is
    malformed" / "file is not a database", PostgreSQL's data_corrupted / index_corrupted), else None."""
    for e in _chain(exc):
        if type(e).__module__.startswith("sqlite3"):
            code = (getattr(e, "sqlite_errorcode", None) or 0) & 0xFF      # the primary code
            text = str(e).strip()
            if code in _SQLITE_CORRUPT or text.lower().startswith(("database disk image is malformed",
                                                                   "file is not a database")):
                return DAMAGED.format(what=f"SQLite: {text}")
        state = getattr(e, "sqlstate", None)
        if state in _PG_CORRUPT:
            return DAMAGED.format(what=f"PostgreSQL {state} {_PG_CORRUPT[state]}")
    return None


def storage_problem(exc: BaseException) -> str | None:
    """The one line for a full disk / read-only folder / I/O failure anywhere in `exc`'s chain, else None."""
    for e in _chain(exc):
        if isinstance(e, OSError):
            if e.errno in _FULL_ERRNOS:
                return FULL
            if e.errno == errno.EROFS:
                return READ_ONLY
        state = getattr(e, "sqlstate", None)
        if state in _PG_STATES:
            return _PG_STATES[state]
        if type(e).__module__.startswith("sqlite3"):
            text = str(e).strip().lower()
            for words, line in _SQLITE_TEXT.items():
                if text.startswith(words):
                    return line
    return None


def folder_problem(folder: str | os.PathLike) -> str | None:
    """Why the studio cannot write into `folder` (read-only mount, no write permission, full disk), else None."""
    try:
        st = os.statvfs(folder)
    except OSError:
        return None                   # missing: the caller says so
    if st.f_flag & os.ST_RDONLY or not os.access(folder, os.W_OK):
        return f"the data folder {folder} is read-only; the database and its -wal/-shm files are written there"
    if st.f_bavail == 0 and os.geteuid() != 0 or st.f_bfree == 0:
        return f"the disk holding the data folder {folder} is full"
    return None

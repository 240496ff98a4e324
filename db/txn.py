"""One short transaction per API call, retried on the transient errors of concurrent writers.

SQLite: BEGIN IMMEDIATE plus a 30 s busy timeout already make writers queue; a "database is locked"
would only appear after that long a wait, and is retried here rather than shown to a curator.
PostgreSQL (READ COMMITTED): deadlocks, serialization failures, and the unique violation of two
transactions inserting the same key at once are retried; the retry sees the other's committed row."""
from __future__ import annotations

import random
import time
from typing import Callable, TypeVar

from sqlalchemy.exc import DBAPIError, IntegrityError, OperationalError
from sqlalchemy.orm import Session

T = TypeVar("T")
RETRIES = 8
_PG_RETRY_CODES = {"40001", "40P01", "23505", "55P03"}   # serialization, deadlock, unique, lock not available


def _transient(err: DBAPIError) -> bool:
    code = getattr(err.orig, "sqlstate", None)
    if code in _PG_RETRY_CODES:
        return True
    msg = str(err.orig).lower()
    return isinstance(err, OperationalError) and ("database is locked" in msg or "database is busy" in msg)


def run_txn(session: Session, fn: Callable[[], T], attempts: int = RETRIES) -> T:
    """Run fn() in the session's transaction and commit; roll back and retry on a transient error.
    Anything else (a UserError, a real constraint violation) rolls back and propagates."""
    for attempt in range(attempts):
        try:
            out = fn()
            session.commit()
            return out
        except (OperationalError, IntegrityError) as err:
            session.rollback()
            if not _transient(err) or attempt == attempts - 1:
                raise
            time.sleep(random.uniform(0, 0.01 * 2 ** attempt))   # jittered backoff
        except BaseException:
            session.rollback()
            raise
    raise AssertionError("unreachable")

"""Team-wide settings (the `settings` table): the one reader and the one writer.

The writer locks the row it replaces and runs in one retried transaction (db/txn.py), so two admins
saving at once leave one whole value; `then` runs in the same transaction for what a setting drives
(e.g. the review overlap re-derives every puzzle's status)."""
from __future__ import annotations

from typing import Callable

from sqlalchemy.orm import Session

from db.models.curation import Setting
from db.txn import run_txn


def get_setting(session: Session, key: str, default=None):
    row = session.get(Setting, key)
    return default if row is None else row.value


def put_setting(session: Session, key: str, value, then: Callable[[], None] | None = None) -> None:
    def txn():
        row = session.get(Setting, key, with_for_update=True)
        if row is None:
            session.add(Setting(key=key, value=value))
        else:
            row.value = value
        session.flush()
        if then is not None:
            then()
    run_txn(session, txn)

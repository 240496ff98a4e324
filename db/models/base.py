"""The declarative base every table registers on, and the column helpers all model modules share."""
from __future__ import annotations

from datetime import datetime, timezone

from sqlalchemy import JSON, BigInteger, Integer
from sqlalchemy.orm import DeclarativeBase

# BIGINT on PostgreSQL, INTEGER (the rowid alias, so autoincrement works) on SQLite.
BigId = BigInteger().with_variant(Integer, "sqlite")


def utcnow() -> datetime:
    return datetime.now(timezone.utc)


class Base(DeclarativeBase):
    type_annotation_map = {dict: JSON, list: JSON}

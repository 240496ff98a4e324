"""SQLAlchemy 2 models: the whole store (synthesis output, curation, sets, runs and rollouts).

Puzzles keep their canonical JSON record (`record_json`) beside the queryable columns, so an export
is byte-identical to what synthesis produced."""
from __future__ import annotations

from datetime import datetime, timezone

from sqlalchemy import (JSON, BigInteger, Boolean, DateTime, Float, ForeignKey, Index, Integer, String, Text,
                        UniqueConstraint)
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column


def utcnow() -> datetime:
    return datetime.now(timezone.utc)


class Base(DeclarativeBase):
    type_annotation_map = {dict: JSON, list: JSON}


class Video(Base):
    __tablename__ = "videos"
    id: Mapped[str] = mapped_column(String(32), primary_key=True)     # sha256[:16]
    sha256: Mapped[str] = mapped_column(String(64), unique=True)
    path: Mapped[str] = mapped_column(Text)
    fps: Mapped[float] = mapped_column(Float)
    duration_s: Mapped[float] = mapped_column(Float)
    width: Mapped[int] = mapped_column(Integer)
    height: Mapped[int] = mapped_column(Integer)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)


class SynthFile(Base):
    """One input file seen by `mvp synth` under one parameter set: done or skipped, with the reason.
    Keyed by (path, size, mtime, params) so a rerun skips it without reading the file again."""
    __tablename__ = "synth_files"
    id: Mapped[int] = mapped_column(primary_key=True)
    path: Mapped[str] = mapped_column(Text)
    size: Mapped[int] = mapped_column(Integer)
    mtime_ns: Mapped[int] = mapped_column(BigInteger)
    params_key: Mapped[str] = mapped_column(String(32))
    status: Mapped[str] = mapped_column(String(16))        # done | skipped
    reason: Mapped[str] = mapped_column(Text, default="")
    video_id: Mapped[str | None] = mapped_column(String(32), nullable=True)
    n_puzzles: Mapped[int] = mapped_column(Integer, default=0)
    sample_fps: Mapped[float] = mapped_column(Float, default=0.0)
    seconds: Mapped[float] = mapped_column(Float, default=0.0)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)
    __table_args__ = (UniqueConstraint("path", "size", "mtime_ns", "params_key"),)


class Puzzle(Base):
    __tablename__ = "puzzles"
    id: Mapped[str] = mapped_column(String(32), primary_key=True)
    video_id: Mapped[str] = mapped_column(ForeignKey("videos.id"), index=True)
    params_key: Mapped[str] = mapped_column(String(32), index=True)
    mask_start: Mapped[int] = mapped_column(Integer)
    mask_length: Mapped[int] = mapped_column(Integer)
    n_options: Mapped[int] = mapped_column(Integer)
    record_json: Mapped[str] = mapped_column(Text)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)


class Option(Base):
    __tablename__ = "options"
    id: Mapped[int] = mapped_column(primary_key=True)
    puzzle_id: Mapped[str] = mapped_column(ForeignKey("puzzles.id", ondelete="CASCADE"), index=True)
    label: Mapped[str] = mapped_column(String(4))
    uri: Mapped[str] = mapped_column(Text)
    t: Mapped[float] = mapped_column(Float)
    source_video_id: Mapped[str] = mapped_column(String(32))
    kind: Mapped[str] = mapped_column(String(16))
    difficulty: Mapped[float] = mapped_column(Float)
    __table_args__ = (UniqueConstraint("puzzle_id", "label"),)


# The other model modules register their tables on the same Base; importing them here means
# `Base.metadata` (and so Alembic and create_all) always sees every table.
from db import models_curation as _models_curation  # noqa: E402,F401
from db import models_runs as _models_runs  # noqa: E402,F401


def __getattr__(name: str):
    # `from db.models import User` keeps working (User lives in models_curation); lazy, because
    # models_curation itself imports this module.
    if name == "User":
        from db.models_curation import User
        return User
    raise AttributeError(name)

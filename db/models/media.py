"""Media tables: videos, the files synthesis saw, puzzles and their options.

Puzzles keep their canonical JSON record (`record_json`) beside the queryable columns, so an export
is byte-identical to what synthesis produced."""
from __future__ import annotations

from datetime import datetime

from sqlalchemy import (
    BigInteger,
    DateTime,
    Float,
    ForeignKey,
    Index,
    Integer,
    String,
    Text,
    UniqueConstraint,
)
from sqlalchemy.orm import Mapped, mapped_column

from db.models.base import Base, utcnow
from db.paths import DataPath


class Video(Base):
    __tablename__ = "videos"
    id: Mapped[str] = mapped_column(String(32), primary_key=True)     # sha256[:16]
    sha256: Mapped[str] = mapped_column(String(64), unique=True)
    path: Mapped[str] = mapped_column(DataPath())      # relative to the data directory when inside it
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
    path: Mapped[str] = mapped_column(DataPath())
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
    # the gallery's order by video: a range scan (db/review/gallery.py)
    __table_args__ = (Index("ix_puzzles_video_id_id", "video_id", "id"),)


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
    __table_args__ = (UniqueConstraint("puzzle_id", "label"),
                      Index("ix_options_kind_puzzle_id", "kind", "puzzle_id"))   # the gallery's kind filter

"""Gallery tables: tags and comments on a puzzle or on one of its distractors, views of the gallery
saved by name per user, and bulk batches (docs/store.md, "Gallery").

A bulk action is ordinary verdicts (one per puzzle, in `puzzle_verdicts` and `verdict_events`) or
ordinary tags; `bulk_batches` names the batch they belong to so that undo removes it as one."""
from __future__ import annotations

from datetime import datetime

from sqlalchemy import JSON, DateTime, ForeignKey, Index, Integer, String, Text, UniqueConstraint
from sqlalchemy.orm import Mapped, mapped_column

from db.models.base import Base, BigId, utcnow


class BulkBatch(Base):
    """One bulk action: who, what (accept | reject | requeue | tag), the reason or tag, how many puzzles."""
    __tablename__ = "bulk_batches"
    id: Mapped[int] = mapped_column(BigId, primary_key=True, autoincrement=True)
    user_id: Mapped[int] = mapped_column(ForeignKey("users.id"), index=True)
    action: Mapped[str] = mapped_column(String(16))
    reason: Mapped[str] = mapped_column(Text, default="")
    n_puzzles: Mapped[int] = mapped_column(Integer, default=0)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)
    undone_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True), nullable=True)


class PuzzleTag(Base):
    """A tag on a puzzle (`label` None) or on one of its options (`label` set)."""
    __tablename__ = "puzzle_tags"
    id: Mapped[int] = mapped_column(BigId, primary_key=True, autoincrement=True)
    puzzle_id: Mapped[str] = mapped_column(ForeignKey("puzzles.id", ondelete="CASCADE"))
    label: Mapped[str] = mapped_column(String(4), default="")     # "" = the puzzle itself
    tag: Mapped[str] = mapped_column(String(40))
    user_id: Mapped[int] = mapped_column(ForeignKey("users.id"))
    batch_id: Mapped[int | None] = mapped_column(ForeignKey("bulk_batches.id"), nullable=True, index=True)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)
    __table_args__ = (UniqueConstraint("puzzle_id", "label", "tag"),
                      Index("ix_puzzle_tags_tag", "tag", "puzzle_id"))


class PuzzleComment(Base):
    """A comment on a puzzle (`label` "") or on one of its options."""
    __tablename__ = "puzzle_comments"
    id: Mapped[int] = mapped_column(BigId, primary_key=True, autoincrement=True)
    puzzle_id: Mapped[str] = mapped_column(ForeignKey("puzzles.id", ondelete="CASCADE"), index=True)
    label: Mapped[str] = mapped_column(String(4), default="")
    user_id: Mapped[int] = mapped_column(ForeignKey("users.id"))
    text: Mapped[str] = mapped_column(Text)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)


class SavedView(Base):
    """A gallery view (filters + sort, as `db.review.gallery.GalleryQuery` fields) saved by name per user."""
    __tablename__ = "saved_views"
    id: Mapped[int] = mapped_column(primary_key=True)
    user_id: Mapped[int] = mapped_column(ForeignKey("users.id", ondelete="CASCADE"))
    name: Mapped[str] = mapped_column(String(80))
    query: Mapped[dict] = mapped_column(JSON, default=dict)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)
    __table_args__ = (UniqueConstraint("user_id", "name"),)

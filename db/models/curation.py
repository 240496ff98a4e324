"""Curation tables: users, verdicts (puzzle and option), their append-only history, leases, the review
queue, settings and frozen curated sets.

Current verdicts live in `puzzle_verdicts` / `option_verdicts` (one row per curator and puzzle/option,
what the UI shows and the status is derived from). Every change to them, including an undo, is also
appended to `verdict_events`, which is never updated or deleted, so no label is ever lost."""
from __future__ import annotations

from datetime import datetime

from sqlalchemy import (
    JSON,
    Boolean,
    CheckConstraint,
    DateTime,
    Float,
    ForeignKey,
    Index,
    Integer,
    String,
    Text,
    UniqueConstraint,
    false,
)
from sqlalchemy.orm import Mapped, mapped_column

from db.models.base import Base, BigId, utcnow

ROLES = ("curator", "researcher", "admin")   # the one list of roles; permissions per page live in app/web/auth.py
PUZZLE_VERDICTS = ("accept", "reject", "skip")
OPTION_VERDICTS = ("keep", "reject")
REASON_CODES = ("near_duplicate", "ambiguous", "too_easy", "broken_frame", "other")
STATUSES = ("pending", "accepted", "rejected", "disputed")


class User(Base):
    __tablename__ = "users"
    id: Mapped[int] = mapped_column(primary_key=True)
    name: Mapped[str] = mapped_column(String(64), unique=True)
    role: Mapped[str] = mapped_column(String(16))          # curator | researcher | admin
    password_hash: Mapped[str] = mapped_column(String(255))
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)
    # A disabled account keeps its name and its work (verdicts stay attributed) but cannot log in,
    # and its sessions end at once (db.users.accounts.set_disabled).
    disabled: Mapped[bool] = mapped_column(Boolean, default=False, server_default=false())
    __table_args__ = (CheckConstraint("role IN ('curator','researcher','admin')", name="ck_users_role"),)


class Setting(Base):
    """Team-wide settings shared by every curator (e.g. `review.overlap_k`)."""
    __tablename__ = "settings"
    key: Mapped[str] = mapped_column(String(64), primary_key=True)
    value: Mapped[dict | list | int | float | str] = mapped_column(JSON)


class PuzzleVerdict(Base):
    """A curator's current verdict on a puzzle (at most one per curator and puzzle)."""
    __tablename__ = "puzzle_verdicts"
    id: Mapped[int] = mapped_column(BigId, primary_key=True, autoincrement=True)
    puzzle_id: Mapped[str] = mapped_column(ForeignKey("puzzles.id", ondelete="CASCADE"))
    user_id: Mapped[int] = mapped_column(ForeignKey("users.id"), index=True)
    verdict: Mapped[str] = mapped_column(String(8))        # accept | reject | skip
    reason: Mapped[str] = mapped_column(Text, default="")
    seconds: Mapped[float] = mapped_column(Float, default=0.0)   # time the curator spent on it
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow, index=True)
    __table_args__ = (UniqueConstraint("puzzle_id", "user_id"),
                      CheckConstraint("verdict IN ('accept','reject','skip')", name="ck_pv_verdict"),
                      # a curator's skipped puzzles in the order they come back (db/review/queue_rule.py)
                      Index("ix_puzzle_verdicts_skips", "user_id", "verdict", "created_at", "puzzle_id"))


class OptionVerdict(Base):
    """A curator's current verdict on one distractor of a puzzle. No row means "keep" (the default)."""
    __tablename__ = "option_verdicts"
    id: Mapped[int] = mapped_column(BigId, primary_key=True, autoincrement=True)
    puzzle_id: Mapped[str] = mapped_column(ForeignKey("puzzles.id", ondelete="CASCADE"))
    option_id: Mapped[int] = mapped_column(ForeignKey("options.id", ondelete="CASCADE"), index=True)
    label: Mapped[str] = mapped_column(String(4))
    user_id: Mapped[int] = mapped_column(ForeignKey("users.id"), index=True)
    verdict: Mapped[str] = mapped_column(String(8))        # keep | reject
    reason_code: Mapped[str | None] = mapped_column(String(16), nullable=True)
    note: Mapped[str] = mapped_column(Text, default="")
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)
    __table_args__ = (UniqueConstraint("puzzle_id", "label", "user_id"),
                      CheckConstraint("verdict IN ('keep','reject')", name="ck_ov_verdict"))


class VerdictEvent(Base):
    """Append-only history: one row per change of a current verdict. `before`/`after` are the verdict as
    a dict (None = no verdict). An undo appends a row with action "undo" and `undoes` = the event it
    reverted. `db.review.requeue` appends a "requeue" row (the researcher, the reason) and one "cleared"
    row per verdict it removed (that verdict's curator, `after` None). Rows are never updated or
    deleted."""
    __tablename__ = "verdict_events"
    id: Mapped[int] = mapped_column(BigId, primary_key=True, autoincrement=True)
    user_id: Mapped[int] = mapped_column(ForeignKey("users.id"))
    puzzle_id: Mapped[str] = mapped_column(ForeignKey("puzzles.id", ondelete="CASCADE"), index=True)
    label: Mapped[str | None] = mapped_column(String(4), nullable=True)   # None: the puzzle verdict
    action: Mapped[str] = mapped_column(String(8))          # set | undo | requeue | cleared
    undoes: Mapped[int | None] = mapped_column(BigId, nullable=True, unique=True)
    before: Mapped[dict | None] = mapped_column(JSON, nullable=True)
    after: Mapped[dict | None] = mapped_column(JSON, nullable=True)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)
    # the bulk action (db/models/gallery.py, BulkBatch) this change belongs to; None: one by hand
    batch_id: Mapped[int | None] = mapped_column(BigId, nullable=True, index=True)
    __table_args__ = (Index("ix_verdict_events_user_id_id", "user_id", "id"),)


class Lease(Base):
    """A puzzle handed to a curator by `next_puzzle`, reserved until `expires_at`."""
    __tablename__ = "leases"
    id: Mapped[int] = mapped_column(BigId, primary_key=True, autoincrement=True)
    puzzle_id: Mapped[str] = mapped_column(ForeignKey("puzzles.id", ondelete="CASCADE"))
    user_id: Mapped[int] = mapped_column(ForeignKey("users.id"), index=True)
    started_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)
    expires_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), index=True)
    __table_args__ = (UniqueConstraint("puzzle_id", "user_id"),)


class ReviewState(Base):
    """Per-puzzle review counters and the derived status, kept in step with the verdicts so the queue
    query is an index range scan even with 100k puzzles. A database trigger (see the migrations)
    adds a row for each new puzzle; `db.review.sync_queue` repairs a database made without it."""
    __tablename__ = "review_state"
    puzzle_id: Mapped[str] = mapped_column(ForeignKey("puzzles.id", ondelete="CASCADE"), primary_key=True)
    n_reviews: Mapped[int] = mapped_column(Integer, default=0)   # accept + reject verdicts
    n_accept: Mapped[int] = mapped_column(Integer, default=0)
    status: Mapped[str] = mapped_column(String(10), default="pending", index=True)
    # how many shortcut solvers solve the puzzle in its latest audit, NULL: not audited; kept by
    # db.puzzles.audit_results.store_results so the gallery's audit flags read a column of the rows it
    # scans (an anti-join over puzzle_audit was 350 ms at 100k on PostgreSQL; docs/store.md)
    audit_shortcuts: Mapped[int | None] = mapped_column(Integer, nullable=True, default=None)
    __table_args__ = (Index("ix_review_state_queue", "n_reviews", "puzzle_id"),
                      Index("ix_review_state_status_id", "status", "puzzle_id"))   # the gallery's order by status


class CuratedSet(Base):
    """A frozen set: never changed after `freeze_set`. `content_hash` is the sha256 of its records."""
    __tablename__ = "curated_sets"
    id: Mapped[int] = mapped_column(primary_key=True)
    name: Mapped[str] = mapped_column(String(128), unique=True)
    content_hash: Mapped[str] = mapped_column(String(64))
    n_puzzles: Mapped[int] = mapped_column(Integer)
    n_excluded: Mapped[int] = mapped_column(Integer, default=0)    # accepted but too few distractors left
    min_distractors: Mapped[int] = mapped_column(Integer)
    params: Mapped[dict] = mapped_column(JSON, default=dict)
    created_by: Mapped[int | None] = mapped_column(ForeignKey("users.id"), nullable=True)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)


class SetItem(Base):
    """One puzzle of a set, with its record as frozen (rejected distractors removed, labels re-lettered)."""
    __tablename__ = "set_items"
    id: Mapped[int] = mapped_column(BigId, primary_key=True, autoincrement=True)
    set_id: Mapped[int] = mapped_column(ForeignKey("curated_sets.id", ondelete="CASCADE"))
    position: Mapped[int] = mapped_column(Integer)
    puzzle_id: Mapped[str] = mapped_column(ForeignKey("puzzles.id"), index=True)
    record_json: Mapped[str] = mapped_column(Text)
    __table_args__ = (UniqueConstraint("set_id", "puzzle_id"), UniqueConstraint("set_id", "position"))

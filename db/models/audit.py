"""The shortcut audit per puzzle: which solver answered which puzzle exactly (docs/store.md,
"Audit per puzzle"). One row per (puzzle, solver) of the latest audit run that covered the puzzle;
a puzzle with no row has not been audited."""
from __future__ import annotations

from datetime import datetime

from sqlalchemy import DateTime, Float, ForeignKey, Index, String
from sqlalchemy.orm import Mapped, mapped_column

from db.models.base import Base, utcnow


class PuzzleAudit(Base):
    """A solver's result on one puzzle: `exact` 1.0 when its answer was the true one, `reward` the
    fine-grained reward of its answer (mvp_core.reward)."""
    __tablename__ = "puzzle_audit"
    puzzle_id: Mapped[str] = mapped_column(ForeignKey("puzzles.id", ondelete="CASCADE"), primary_key=True)
    solver: Mapped[str] = mapped_column(String(32), primary_key=True)
    exact: Mapped[float] = mapped_column(Float)
    reward: Mapped[float] = mapped_column(Float)
    audited_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)
    # the gallery's "solved by" filters: an index range per solver and result
    __table_args__ = (Index("ix_puzzle_audit_solver_exact", "solver", "exact", "puzzle_id"),)

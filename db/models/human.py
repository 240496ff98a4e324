"""Human answers: a curator's own answer to a puzzle, given blind before vetting it (solve first,
then vet). One per curator and puzzle; scored with the model's reward, so humans are a baseline
beside the model and the shortcut solvers (db/review/human.py)."""
from __future__ import annotations

from datetime import datetime

from sqlalchemy import JSON, DateTime, Float, ForeignKey, UniqueConstraint
from sqlalchemy.orm import Mapped, mapped_column

from db.models.base import Base, BigId, utcnow


class HumanAnswer(Base):
    __tablename__ = "human_answers"
    id: Mapped[int] = mapped_column(BigId, primary_key=True, autoincrement=True)
    puzzle_id: Mapped[str] = mapped_column(ForeignKey("puzzles.id", ondelete="CASCADE"), index=True)
    user_id: Mapped[int] = mapped_column(ForeignKey("users.id"), index=True)
    labels: Mapped[list] = mapped_column(JSON)              # the ordered labels the curator chose
    selection: Mapped[float] = mapped_column(Float)
    order: Mapped[float] = mapped_column(Float)
    exact: Mapped[float] = mapped_column(Float)             # 1.0 when the list equals the answer
    total: Mapped[float] = mapped_column(Float)             # the reward (format counted as met)
    seconds: Mapped[float] = mapped_column(Float)           # from the puzzle shown to the answer
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)
    __table_args__ = (UniqueConstraint("puzzle_id", "user_id"),)

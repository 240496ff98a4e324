"""Runs, checkpoints and rollouts: what a model answered to which puzzle, and how each answer scored.

A `Run` is either a rollout job (`mvp rollout`) or a training run (`mvp train`) whose run directory the
app imports. Every stored answer is one `Rollout` row: the completion text, the labels it chose and each
reward term (docs/ARCHITECTURE.md, "Reward"), so analytics can ask "which distractor kinds does the model fall for"."""
from __future__ import annotations

from datetime import datetime

from sqlalchemy import JSON, DateTime, Float, ForeignKey, Index, Integer, String, Text, UniqueConstraint
from sqlalchemy.orm import Mapped, mapped_column

from db.models.base import Base, BigId, utcnow
from db.paths import DataPath


class Run(Base):
    __tablename__ = "runs"
    id: Mapped[str] = mapped_column(String(64), primary_key=True)   # e.g. a timestamped slug
    name: Mapped[str] = mapped_column(String(200), default="")
    kind: Mapped[str] = mapped_column(String(16), index=True)       # "rollout" | "train" | "eval"
    model_path: Mapped[str] = mapped_column(DataPath(maybe_name=True), default="")   # or a model name
    set_name: Mapped[str | None] = mapped_column(String(128), nullable=True, index=True)
    config: Mapped[dict] = mapped_column(JSON, default=dict)        # the full config as given
    status: Mapped[str] = mapped_column(String(16), default="created")  # created|running|done|failed|stopped
    dir: Mapped[str] = mapped_column(DataPath(), default="")        # the run directory, if any
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)


class Checkpoint(Base):
    __tablename__ = "checkpoints"
    id: Mapped[int] = mapped_column(BigId, primary_key=True, autoincrement=True)
    run_id: Mapped[str] = mapped_column(ForeignKey("runs.id", ondelete="CASCADE"), index=True)
    step: Mapped[int] = mapped_column(Integer)
    path: Mapped[str] = mapped_column(DataPath())
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)
    __table_args__ = (UniqueConstraint("run_id", "step"),)


class Rollout(Base):
    """One sampled answer. `checkpoint_id` is NULL for answers of the base model given by `run.model_path`.
    Note: SQL treats NULLs as distinct, so the unique key does not stop two NULL-checkpoint rows with the
    same (run, puzzle, sample); writers key their upserts on it explicitly (db/runs/rollouts.py)."""
    __tablename__ = "rollouts"
    id: Mapped[int] = mapped_column(BigId, primary_key=True, autoincrement=True)
    run_id: Mapped[str] = mapped_column(ForeignKey("runs.id", ondelete="CASCADE"), index=True)
    checkpoint_id: Mapped[int | None] = mapped_column(ForeignKey("checkpoints.id", ondelete="CASCADE"),
                                                      nullable=True, index=True)
    puzzle_id: Mapped[str] = mapped_column(ForeignKey("puzzles.id", ondelete="CASCADE"), index=True)
    sample_index: Mapped[int] = mapped_column(Integer)
    completion: Mapped[str] = mapped_column(Text)
    chosen_labels: Mapped[list] = mapped_column(JSON, default=list)   # e.g. ["C", "A", "F"]
    format: Mapped[float] = mapped_column(Float)
    selection: Mapped[float] = mapped_column(Float)
    order: Mapped[float] = mapped_column(Float)
    exact: Mapped[float] = mapped_column(Float)
    total: Mapped[float] = mapped_column(Float)
    advantage: Mapped[float | None] = mapped_column(Float, nullable=True)
    # The set (and split) whose record the model answered: its option letters are the set's.
    set_name: Mapped[str | None] = mapped_column(String(128), nullable=True)
    split: Mapped[str | None] = mapped_column(String(16), nullable=True)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)
    __table_args__ = (UniqueConstraint("run_id", "checkpoint_id", "puzzle_id", "sample_index"),
                      # a run's mean exact per puzzle from the index alone: the gallery's model filter
                      Index("ix_rollouts_run_puzzle_exact", "run_id", "puzzle_id", "exact"))


class Evaluation(Base):
    """One `mvp eval` of a run's checkpoint (NULL = the run's base model) on a set split: the whole
    report (groups by distractor kind and hardness, the shortcut baselines, every answer) as JSON.
    Writers replace an existing row with the same key (db/runs/evaluations.py): NULLs again."""
    __tablename__ = "evaluations"
    id: Mapped[int] = mapped_column(BigId, primary_key=True, autoincrement=True)
    run_id: Mapped[str] = mapped_column(ForeignKey("runs.id", ondelete="CASCADE"), index=True)
    checkpoint_id: Mapped[int | None] = mapped_column(ForeignKey("checkpoints.id", ondelete="CASCADE"),
                                                      nullable=True, index=True)
    set_name: Mapped[str] = mapped_column(String(128))
    split: Mapped[str] = mapped_column(String(16), default="")          # "" = the whole set
    n_puzzles: Mapped[int] = mapped_column(Integer)
    exact: Mapped[float] = mapped_column(Float)
    total: Mapped[float] = mapped_column(Float)
    report: Mapped[dict] = mapped_column(JSON)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)

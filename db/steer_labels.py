"""Rollout answers as energy-steering labels: per answer, whether it was right (docs/steer.md).

A thin read over the `rollouts` table so mvp_core.steer never touches the database; the rule that
turns answers into good/bad lives in mvp_core.steer.puzzles."""
from __future__ import annotations

from sqlalchemy import select
from sqlalchemy.orm import Session

from db.models.runs import Checkpoint, Rollout, Run
from mvp_core.errors import UserError


def rollout_answers(s: Session, run_id: str, checkpoint_step: int | None = None,
                    puzzle_ids: list[str] | None = None) -> list[dict]:
    """[{puzzle_id, sample_index, exact, total}] of one run's answers (checkpoint step, or the base
    model when None), optionally only for `puzzle_ids`."""
    if s.get(Run, run_id) is None:
        raise UserError(f"no run {run_id!r} in the database")
    q = select(Rollout.puzzle_id, Rollout.sample_index, Rollout.exact, Rollout.total).where(Rollout.run_id == run_id)
    if checkpoint_step is None:
        q = q.where(Rollout.checkpoint_id.is_(None))
    else:
        ck = s.scalar(select(Checkpoint.id).where(Checkpoint.run_id == run_id, Checkpoint.step == checkpoint_step))
        if ck is None:
            raise UserError(f"run {run_id!r} has no checkpoint at step {checkpoint_step}")
        q = q.where(Rollout.checkpoint_id == ck)
    if puzzle_ids is not None:
        q = q.where(Rollout.puzzle_id.in_(puzzle_ids))
    rows = [{"puzzle_id": p, "sample_index": int(i), "exact": float(e), "total": float(t)}
            for p, i, e, t in s.execute(q.order_by(Rollout.puzzle_id, Rollout.sample_index))]
    if not rows:
        raise UserError(f"run {run_id!r} has no stored answers for that checkpoint")
    return rows

"""Each stored run's answers as (total reward, exact, video id) columns: what an interval over videos needs
(mvp_core/stats/bootstrap.py). Used by the demo's summary table."""
from __future__ import annotations

from sqlalchemy import select

from db.models import Puzzle
from db.models.runs import Rollout


def answer_columns(session, run_id: str) -> tuple[list[float], list[float], list[str]]:
    rows = session.execute(
        select(Rollout.total, Rollout.exact, Puzzle.video_id)
        .join(Puzzle, Puzzle.id == Rollout.puzzle_id)
        .where(Rollout.run_id == run_id)
        .order_by(Rollout.id)).all()
    return [r[0] for r in rows], [r[1] for r in rows], [r[2] for r in rows]

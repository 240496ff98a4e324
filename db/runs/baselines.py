"""Humans beside the model and the shortcut solvers, on the same puzzles.

`compare` takes the puzzles curators have answered (`db.review.human`), and scores on exactly those: the
curators' mean, each shortcut solver of the audit (`mvp_core.synth.audit`), chance, and every stored
model run / checkpoint that has rollouts on them. Each row is a mean over puzzles (a puzzle weighs
the same whatever its number of answers or samples) with a 95% bootstrap interval, so the Stats page
and eval tables read humans as one more baseline."""
from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path

import numpy as np
from sqlalchemy import select
from sqlalchemy.orm import Session

from db.chunks import in_chunks
from db.review.human import per_puzzle
from db.models import Puzzle as PuzzleRow
from db.models.runs import Checkpoint, Rollout
from db.runs.names import version_label
from mvp_core.stats.bootstrap import ci

MAX_PUZZLES = 500        # the shortcut solvers read frames: keep a page load bounded


def _row(solver: str, exacts: list[float], rewards: list[float], videos: list[str], n_puzzles: int) -> dict:
    """Intervals resample videos (mvp_core/stats/bootstrap.py); `videos` is each value's video."""
    return {"solver": solver, "puzzles": n_puzzles,
            "exact": round(float(np.mean(exacts)), 4) if exacts else None,
            "exact_ci": [round(x, 4) for x in ci(exacts, videos)],
            "reward": round(float(np.mean(rewards)), 4) if rewards else None,
            "reward_ci": [round(x, 4) for x in ci(rewards, videos)]}


def _shortcut_rows(session: Session, data_dir: Path, pids: list[str]) -> list[dict]:
    from mvp_core.puzzle import Puzzle
    from mvp_core.reward import score_prediction
    from mvp_core.synth.audit import SOLVERS, FeatureCache, chance_exact
    from mvp_core.video.frames import FrameStore
    recs = dict(session.execute(select(PuzzleRow.id, PuzzleRow.record_json).where(PuzzleRow.id.in_(pids))).all())
    puzzles = [Puzzle.from_dict(json.loads(recs[p])) for p in pids if p in recs]
    feats = FeatureCache(FrameStore(data_dir).load)
    rows = []
    for name, solve in SOLVERS.items():
        ex, rw, vids = [], [], [p.video.id for p in puzzles]
        for p in puzzles:
            t = score_prediction(solve(p, feats), p.answer, [o.label for o in p.options])
            ex.append(t.exact)
            rw.append(t.total)
        rows.append(_row(f"shortcut: {name}", ex, rw, vids, len(puzzles)))
    chance = [chance_exact(p) for p in puzzles]
    rows.append({"solver": "chance (exact)", "puzzles": len(puzzles),
                 "exact": round(float(np.mean(chance)), 4) if chance else None, "exact_ci": [None, None],
                 "reward": None, "reward_ci": [None, None]})
    return rows


def _model_rows(session: Session, pids: list[str], video_of: dict[str, str]) -> list[dict]:
    per: dict[tuple, dict[str, list]] = defaultdict(lambda: defaultdict(list))
    steps = dict(session.execute(select(Checkpoint.id, Checkpoint.step)).all())
    for chunk in in_chunks(pids):
        q = select(Rollout.run_id, Rollout.checkpoint_id, Rollout.puzzle_id, Rollout.exact, Rollout.total).where(
            Rollout.puzzle_id.in_(chunk))
        for run, ck, pid, exact, total in session.execute(q):
            per[(run, ck)][pid].append((exact, total))
    rows = []
    for (run, ck), by_pid in sorted(per.items(), key=lambda kv: (kv[0][0], kv[0][1] or -1)):
        ex = [float(np.mean([e for e, _ in v])) for v in by_pid.values()]
        rw = [float(np.mean([t for _, t in v])) for v in by_pid.values()]
        # named by what the model is (db/runs/names.py), never "base": a rollout of a GRPO checkpoint is that model
        what = version_label(session, run, None if ck is None else steps.get(ck))
        rows.append(_row(what, ex, rw, [video_of[p] for p in by_pid], len(by_pid)))
    return rows


def compare(session: Session, data_dir: str | Path, limit: int = MAX_PUZZLES) -> list[dict]:
    """[{solver, puzzles, exact, exact_ci, reward, reward_ci}]: humans first, then the shortcut
    solvers and chance, then each model run/checkpoint with rollouts, all on the puzzles curators
    answered (the first `limit` by id)."""
    humans = per_puzzle(session)[:limit]
    if not humans:
        return []
    pids = [r["puzzle_id"] for r in humans]
    rows = [_row("humans (curators, blind)", [r["exact"] for r in humans], [r["reward"] for r in humans],
                 [r["video_id"] for r in humans], len(humans))]
    video_of = {r["puzzle_id"]: r["video_id"] for r in humans}
    return rows + _shortcut_rows(session, Path(data_dir), pids) + _model_rows(session, pids, video_of)

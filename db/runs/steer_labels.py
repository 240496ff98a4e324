"""Energy-steering labels from the database (docs/steer.md): rollout answers (per answer, whether it
was right) and curator verdicts (per curator, accept / reject / skip), and the puzzles a bank built
from them collects on (`labelled_puzzles`).

Thin reads over the `rollouts` and `puzzle_verdicts` tables so mvp_core.steer never touches the
database; the rules that turn them into good/bad live in mvp_core.steer.puzzles."""
from __future__ import annotations

from sqlalchemy import select
from sqlalchemy.orm import Session

from db.chunks import in_chunks
from db.models.curation import PuzzleVerdict
from db.models.runs import Checkpoint, Rollout, Run
from mvp_core.errors import UserError


def rollout_answers(s: Session, run_id: str, checkpoint_step: int | None = None,
                    puzzle_ids: list[str] | None = None) -> list[dict]:
    """[{puzzle_id, sample_index, exact, total}] of the answers stored for one model version (a run's
    checkpoint step, or its own model when None), optionally only for `puzzle_ids`. Answers another
    run stored with the same model count too (a rollout run of a checkpoint answered with that
    checkpoint: the demo's warm start answered two puzzle shapes in two runs)."""
    from sqlalchemy import and_, or_
    run = s.get(Run, run_id)
    if run is None:
        raise UserError(f"no run {run_id!r} in the database")
    if checkpoint_step is None:
        own, path = and_(Rollout.run_id == run_id, Rollout.checkpoint_id.is_(None)), run.model_path
    else:
        ck = s.execute(select(Checkpoint.id, Checkpoint.path).where(Checkpoint.run_id == run_id,
                                                                   Checkpoint.step == checkpoint_step)).first()
        if ck is None:
            raise UserError(f"run {run_id!r} has no checkpoint at step {checkpoint_step}")
        own, path = Rollout.checkpoint_id == ck[0], ck[1]
    same = [own]
    if path:
        others = s.scalars(select(Run.id).where(Run.model_path == path, Run.id != run_id)).all()
        cks = s.scalars(select(Checkpoint.id).where(Checkpoint.path == path)).all()
        same += [and_(Rollout.run_id.in_(others), Rollout.checkpoint_id.is_(None))] if others else []
        same += [Rollout.checkpoint_id.in_(cks)] if cks else []
    q = select(Rollout.puzzle_id, Rollout.sample_index, Rollout.exact, Rollout.total).where(or_(*same))
    if puzzle_ids is not None:
        q = q.where(Rollout.puzzle_id.in_(puzzle_ids))
    rows = [{"puzzle_id": p, "sample_index": int(i), "exact": float(e), "total": float(t)}
            for p, i, e, t in s.execute(q.order_by(Rollout.puzzle_id, Rollout.sample_index))]
    if not rows:
        raise UserError(f"run {run_id!r} has no stored answers for that checkpoint")
    return rows


def curator_verdicts(s: Session, puzzle_ids: list[str] | None = None) -> list[dict]:
    """[{puzzle_id, verdict}]: every curator's current verdict, optionally only for `puzzle_ids`
    (queried in chunks: db/chunks.py)."""
    q = select(PuzzleVerdict.puzzle_id, PuzzleVerdict.verdict).order_by(PuzzleVerdict.puzzle_id, PuzzleVerdict.id)
    chunks = [None] if puzzle_ids is None else in_chunks(puzzle_ids)
    rows = []
    for chunk in chunks:
        qc = q if chunk is None else q.where(PuzzleVerdict.puzzle_id.in_(chunk))
        rows += [{"puzzle_id": p, "verdict": v} for p, v in s.execute(qc)]
    if not rows:
        raise UserError("no curator verdicts on these puzzles")
    return rows


def labelled_puzzles(s: Session, source: str, run_id: str | None = None, checkpoint_step: int | None = None,
                     set_name: str | None = None, split: str | None = None,
                     reward_threshold: float = 1.0) -> dict[str, bool]:
    """{puzzle_id: bad?} of every puzzle a label source covers, wherever both kinds can exist: "verdicts"
    the review store's accepted and rejected puzzles (a frozen set holds only accepted ones), "stored"
    the puzzles the run's checkpoint answered. With a set and a split, the set's other splits are left
    out, so its held-out puzzles stay unseen by the bank."""
    from db.sets.curated import load_set
    from mvp_core.steer.puzzles import puzzle_labels, verdict_labels
    if source == "verdicts":
        labels = verdict_labels(curator_verdicts(s))
    elif source == "stored":
        labels = puzzle_labels(rollout_answers(s, run_id or "", checkpoint_step), reward_threshold)
    else:
        raise UserError(f"labels from {source!r} are not stored (they are known only once the model answers)")
    if set_name and split:
        other = {r["id"] for r in load_set(s, set_name) if r.get("split") and r["split"] != split}
        labels = {pid: bad for pid, bad in labels.items() if pid not in other}
    return labels


def puzzle_records(s: Session, puzzle_ids: list[str]) -> list[dict]:
    """The stored records of these puzzles, in the given order (queried in chunks: db/chunks.py)."""
    import json

    from db.models import Puzzle
    rows = {}
    for chunk in in_chunks(list(puzzle_ids)):
        rows.update(dict(s.execute(select(Puzzle.id, Puzzle.record_json).where(Puzzle.id.in_(chunk))).all()))
    return [json.loads(rows[p]) for p in puzzle_ids if p in rows]


def puzzle_videos(s: Session, puzzle_ids: list[str]) -> dict[str, str]:
    """{puzzle_id: video_id} of these puzzles (a bank's validation and test are drawn by video)."""
    from db.models import Puzzle
    out = {}
    for chunk in in_chunks(list(puzzle_ids)):
        out.update(dict(s.execute(select(Puzzle.id, Puzzle.video_id).where(Puzzle.id.in_(chunk))).all()))
    return out

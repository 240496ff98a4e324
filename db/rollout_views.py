"""Read-only queries behind the rollouts page: runs, checkpoints, videos, puzzles and answer groups.

A run on a frozen set answered the set's records, whose options were re-lettered after rejected
distractors were removed, so a group is always shown against the record the model actually saw:
the set item's record when the run names a set, else the puzzle's own record."""
from __future__ import annotations

import json
from dataclasses import dataclass

from sqlalchemy import distinct, func, select
from sqlalchemy.orm import Session

from db.models import Puzzle, Video
from db.models.curation import CuratedSet, SetItem
from db.models.runs import Checkpoint, Rollout, Run

BASE = "base"          # the checkpoint key of answers from the run's base model (checkpoint_id NULL)
ZERO_STD = 1e-9


def ckpt_filter(key: str | None):
    if key in (None, "", BASE):
        return Rollout.checkpoint_id.is_(None)
    return Rollout.checkpoint_id == int(key)


def runs(s: Session) -> list[tuple[str, str]]:
    """(label, run id) for every run that has answers, newest first."""
    q = (select(Run.id, Run.name, Run.kind, Run.model_path, func.count(Rollout.id))
         .join(Rollout, Rollout.run_id == Run.id).group_by(Run.id, Run.name, Run.kind, Run.model_path)
         .order_by(Run.created_at.desc()))
    return [(f"{rid} · {kind} · {n} answers" + (f" · {name}" if name and name != rid else ""), rid)
            for rid, name, kind, _m, n in s.execute(q)]


def run_info(s: Session, run_id: str) -> dict:
    r = s.get(Run, run_id)
    if r is None:
        return {}
    return {"id": r.id, "name": r.name, "kind": r.kind, "model_path": r.model_path, "set_name": r.set_name,
            "config": r.config or {}}


def checkpoints(s: Session, run_id: str) -> list[tuple[str, str]]:
    """(label, key) of the checkpoints of a run that have answers; the base model's key is BASE."""
    ids = [c for (c,) in s.execute(select(distinct(Rollout.checkpoint_id)).where(Rollout.run_id == run_id))]
    out = [("base model", BASE)] if None in ids else []
    if any(c is not None for c in ids):
        for cid, step in s.execute(select(Checkpoint.id, Checkpoint.step)
                                   .where(Checkpoint.id.in_([c for c in ids if c is not None]))
                                   .order_by(Checkpoint.step)):
            out.append((f"step {step}", str(cid)))
    return out


def videos(s: Session, run_id: str, ckpt: str | None) -> list[tuple[str, str]]:
    """(label, video id) of the videos whose puzzles this run/checkpoint answered."""
    q = (select(Video.id, Video.path, func.count(distinct(Rollout.puzzle_id)))
         .join(Puzzle, Puzzle.video_id == Video.id).join(Rollout, Rollout.puzzle_id == Puzzle.id)
         .where(Rollout.run_id == run_id, ckpt_filter(ckpt)).group_by(Video.id, Video.path).order_by(Video.path))
    return [(f"{path.rsplit('/', 1)[-1]} ({n} puzzles)", vid) for vid, path, n in s.execute(q)]


@dataclass
class PuzzleSummary:
    puzzle_id: str
    n: int
    mean: float
    std: float

    @property
    def zero_variance(self) -> bool:
        return self.n > 1 and self.std <= ZERO_STD

    @property
    def label(self) -> str:
        flag = " · ZERO VARIANCE" if self.zero_variance else ""
        return f"{self.puzzle_id} · G={self.n} · mean {self.mean:.3f} · std {self.std:.3f}{flag}"


def puzzles(s: Session, run_id: str, ckpt: str | None, video_id: str) -> list[PuzzleSummary]:
    q = (select(Rollout.puzzle_id, Rollout.total).join(Puzzle, Puzzle.id == Rollout.puzzle_id)
         .where(Rollout.run_id == run_id, ckpt_filter(ckpt), Puzzle.video_id == video_id)
         .order_by(Rollout.puzzle_id))
    groups: dict[str, list[float]] = {}
    for pid, total in s.execute(q):
        groups.setdefault(pid, []).append(float(total))
    import torch  # with the training code: imported when a page asks, not with the app

    from mvp_core.grpo.loss import group_advantages
    out = []
    for pid, totals in groups.items():
        # the std training divides by (Bessel-corrected; 0 for a group of one)
        std = float(group_advantages(torch.tensor(totals), len(totals)).std.nan_to_num(0.0)[0])
        out.append(PuzzleSummary(pid, len(totals), sum(totals) / len(totals), std))
    return out


def record_seen(s: Session, run_id: str, puzzle_id: str) -> dict | None:
    """The puzzle record the run's model answered (the set's re-lettered one when the run names a set)."""
    run = s.get(Run, run_id)
    if run is not None and run.set_name:
        rec = s.scalar(select(SetItem.record_json).join(CuratedSet, CuratedSet.id == SetItem.set_id)
                       .where(CuratedSet.name == run.set_name, SetItem.puzzle_id == puzzle_id))
        if rec:
            return json.loads(rec)
    row = s.get(Puzzle, puzzle_id)
    return json.loads(row.record_json) if row is not None else None


def group(s: Session, run_id: str, ckpt: str | None, puzzle_id: str) -> list[dict]:
    """The G answers, in sample order, with each reward term and the advantage. Where the run stored
    no advantage, the one training computes for this group (`group_advantage_list`) is given, marked."""
    from mvp_core.grpo.loss import group_advantage_list  # torch: imported when a page asks
    rows = s.scalars(select(Rollout).where(Rollout.run_id == run_id, ckpt_filter(ckpt),
                                           Rollout.puzzle_id == puzzle_id).order_by(Rollout.sample_index)).all()
    computed_adv = group_advantage_list([r.total for r in rows])
    out = []
    for r, group_adv in zip(rows, computed_adv):
        computed = r.advantage is None
        adv = group_adv if computed else r.advantage
        out.append({"sample": r.sample_index, "completion": r.completion, "chosen": list(r.chosen_labels or []),
                    "format": r.format, "selection": r.selection, "order": r.order, "exact": r.exact,
                    "total": r.total, "advantage": adv, "advantage_computed": computed})
    return out


def fooled(record: dict, answers: list[dict]) -> list[dict]:
    """Per distractor: how many of the answers chose it."""
    n = len(answers)
    out = []
    for o in record["options"]:
        if o["kind"] == "target":
            continue
        k = sum(1 for a in answers if o["label"] in a["chosen"])
        out.append({"label": o["label"], "uri": o["uri"], "kind": o["kind"], "difficulty": o["difficulty"],
                    "chosen": k, "rate": k / n if n else 0.0})
    return sorted(out, key=lambda d: -d["rate"])

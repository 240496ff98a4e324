"""Read-only queries behind the Rollouts page: which (run, checkpoint) pairs have answers, their
videos and puzzles, one answer group with its reward terms and advantage.

A *source* is one model version's answers: the key "RUN_ID|CKPT" with CKPT "base" (the run's
starting model, checkpoint NULL) or a checkpoint id, so any two checkpoints (of one run or of two)
can be put side by side. A group is shown against the record the model actually saw: the set's
re-lettered record named by the answers (or the run), else the puzzle's own record. The advantage
is the training formula (mvp_core.train.loss.group_advantages with the run's scale_rewards), stored or computed.

Torch (about 700 MB resident, seconds to import) is imported only to compute the advantages of a group
that has none stored (an imported run's): the server at rest, and the page for answers written by
`mvp rollout` or the trainer, never load it (docs/web.md, "Speed and memory")."""
from __future__ import annotations

import json
import statistics
from dataclasses import dataclass

from sqlalchemy import distinct, func, select
from sqlalchemy.orm import Session

from db.models import Puzzle, Video
from db.models.curation import CuratedSet, SetItem
from db.models.runs import Checkpoint, Rollout, Run

BASE = "base"
ZERO_STD = 1e-9


def source_key(run_id: str, checkpoint_id: int | None) -> str:
    return f"{run_id}|{BASE if checkpoint_id is None else checkpoint_id}"


def parse_source(key: str | None) -> tuple[str, int | None] | None:
    if not key or "|" not in key:
        return None
    run_id, ck = key.rsplit("|", 1)
    return run_id, (None if ck in ("", BASE) else int(ck))


def _where(src: tuple[str, int | None]):
    run_id, ck = src
    return (Rollout.run_id == run_id, Rollout.checkpoint_id.is_(None) if ck is None else Rollout.checkpoint_id == ck)


def sources(s: Session) -> list[tuple[str, str]]:
    """(label, key) of every run checkpoint with answers, named by what it is (db/runs/names.py):
    newest run first, its newest checkpoint first and its start model last."""
    from db.runs.names import checkpoint_label, start_name
    q = (select(Run.id, Run.kind, Run.created_at, Run.model_path, Rollout.checkpoint_id, Checkpoint.step,
                func.count(Rollout.id))
         .join(Rollout, Rollout.run_id == Run.id).outerjoin(Checkpoint, Checkpoint.id == Rollout.checkpoint_id)
         .group_by(Run.id, Run.kind, Run.created_at, Run.model_path, Rollout.checkpoint_id, Checkpoint.step))
    rows = sorted(s.execute(q), key=lambda r: (-r[2].timestamp(), r[0], 1 if r[5] is None else 0, -(r[5] or 0)))
    starts = {mp: start_name(s, mp) for mp in {r[3] for r in rows}}
    return [(f"{checkpoint_label(rid, kind, None if ck is None else step, starts[mp])} · {n} answers",
             source_key(rid, ck)) for rid, kind, _t, mp, ck, step, n in rows]


def source_label(s: Session, key: str) -> str:
    from db.runs.names import version_label
    src = parse_source(key)
    if src is None:
        return ""
    step = s.scalar(select(Checkpoint.step).where(Checkpoint.id == src[1])) if src[1] is not None else None
    return version_label(s, src[0], step)


def start_source(s: Session, key: str | None, keys: list[str]) -> str | None:
    """Among `keys` (sources with answers), the answers of the model checkpoint `key`'s run started
    from: the run's own start-model answers, else those stored under the warm-start checkpoint
    (another run's), or those of any run that answered with that model, else None (also when `key`
    is a start model). A run that only answered with a trained checkpoint (a rollout of GRPO step
    60) is compared with the model that checkpoint's run started from."""
    src = parse_source(key)
    if src is None:
        return None
    run = s.get(Run, src[0])
    if src[1] is None:       # the run's own model: a start model, unless it is another run's checkpoint
        trained = s.scalar(select(Checkpoint.run_id).where(Checkpoint.path == run.model_path).limit(1)) \
            if run is not None and run.model_path else None
        start = s.get(Run, trained).model_path if trained else None
    else:
        own = source_key(src[0], None)
        if own in keys and own != key:
            return own
        start = run.model_path if run is not None else None
    if not start:
        return None
    for ck_id, run_id in s.execute(select(Checkpoint.id, Checkpoint.run_id).where(Checkpoint.path == start)):
        k = source_key(run_id, ck_id)
        if k in keys:
            return k
    for (run_id,) in s.execute(select(Run.id).where(Run.model_path == start).order_by(Run.created_at.desc())):
        k = source_key(run_id, None)
        if k in keys and k != key:
            return k
    return None


def run_info(s: Session, ref: str) -> dict:
    """A run's facts, by run id or by source key; for a checkpoint's source key `model_path` is that
    checkpoint's directory (the model whose answers are shown), `base_model_path` the run's."""
    src = parse_source(ref)
    r = s.get(Run, src[0] if src else ref)
    if r is None:
        return {}
    path = r.model_path
    if src and src[1] is not None:
        path = s.scalar(select(Checkpoint.path).where(Checkpoint.id == src[1])) or path
    from db.runs.names import start_name
    return {"id": r.id, "name": r.name, "kind": r.kind, "model_path": path, "base_model_path": r.model_path,
            "start": start_name(s, r.model_path), "set_name": r.set_name, "config": r.config or {}}


def videos(s: Session, key: str) -> list[tuple[str, str]]:
    """(label, video id) of the videos whose puzzles this source answered, by file name."""
    src = parse_source(key)
    if src is None:
        return []
    q = (select(Video.id, Video.path, func.count(distinct(Rollout.puzzle_id)))
         .join(Puzzle, Puzzle.video_id == Video.id).join(Rollout, Rollout.puzzle_id == Puzzle.id)
         .where(*_where(src)).group_by(Video.id, Video.path).order_by(Video.path))
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


def puzzles(s: Session, key: str, video_id: str) -> list[PuzzleSummary]:
    src = parse_source(key)
    if src is None:
        return []
    q = (select(Rollout.puzzle_id, Rollout.total).join(Puzzle, Puzzle.id == Rollout.puzzle_id)
         .where(*_where(src), Puzzle.video_id == video_id).order_by(Rollout.puzzle_id))
    groups: dict[str, list[float]] = {}
    for pid, total in s.execute(q):
        groups.setdefault(pid, []).append(float(total))
    # the std training divides by (Bessel-corrected, as mvp_core.train.loss.nanstd; 0 for a group of one):
    # a label and the zero-variance flag, so Python's float64 serves and torch stays unloaded
    return [PuzzleSummary(pid, len(totals), sum(totals) / len(totals),
                          statistics.stdev(totals) if len(totals) > 1 else 0.0) for pid, totals in groups.items()]


def record_seen(s: Session, key: str, puzzle_id: str) -> dict | None:
    """The puzzle record this source's model answered (the set's re-lettered one when known)."""
    src = parse_source(key)
    set_name = None
    if src is not None:
        set_name = s.scalar(select(Rollout.set_name).where(*_where(src), Rollout.puzzle_id == puzzle_id).limit(1))
        if set_name is None:
            run = s.get(Run, src[0])
            set_name = run.set_name if run is not None else None
    if set_name:
        rec = s.scalar(select(SetItem.record_json).join(CuratedSet, CuratedSet.id == SetItem.set_id)
                       .where(CuratedSet.name == set_name, SetItem.puzzle_id == puzzle_id))
        if rec:
            return json.loads(rec)
    row = s.get(Puzzle, puzzle_id)
    return json.loads(row.record_json) if row is not None else None


def group(s: Session, key: str, puzzle_id: str) -> list[dict]:
    """The answers, in sample order, with each reward term and the advantage: the stored one (the
    trainer's formula, written by `mvp rollout` or the trainer), else the one the run's own config
    computes for this group (`group_advantages` with the run's `scale_rewards`), marked. Each answer
    carries `advantage_rule`, the rule its advantage follows (the page's caption says it)."""
    src = parse_source(key)
    if src is None:
        return []
    rows = s.scalars(select(Rollout).where(*_where(src), Rollout.puzzle_id == puzzle_id)
                     .order_by(Rollout.sample_index)).all()
    if not rows:
        return []
    run = s.get(Run, src[0])
    rule = str((run.config or {}).get("scale_rewards", "group")) if run is not None else "group"
    if rule not in ("group", "batch", "none"):
        rule = "group"
    computed = ([r.advantage for r in rows] if all(r.advantage is not None for r in rows)
                else _computed_advantages([r.total for r in rows], rule))
    return [{"sample": r.sample_index, "completion": r.completion, "chosen": list(r.chosen_labels or []),
             "format": r.format, "selection": r.selection, "order": r.order, "exact": r.exact,
             "total": r.total, "advantage": a if r.advantage is None else r.advantage,
             "advantage_computed": r.advantage is None, "advantage_rule": rule} for r, a in zip(rows, computed)]


def _computed_advantages(totals: list[float], rule: str) -> list[float]:
    """The trainer's own function, so the page shows bit for bit what training computes."""
    import torch  # only here: see the module's docstring

    from mvp_core.train.loss import group_advantages
    # "batch" divides by the std of the whole training batch, which one stored group cannot show: the
    # computed value then uses this group's std, and the rule says so
    return group_advantages(torch.tensor(totals, dtype=torch.float64), len(totals),
                            "group" if rule == "batch" else rule).advantages.tolist()


ADVANTAGE_RULES = {
    "group": "(r - group mean) / (group std + 1e-4): the trainer's formula with this run's scale_rewards",
    "none": "r - group mean: the trainer's formula with this run's scale_rewards (none)",
    "batch": "(r - group mean) / (batch std + 1e-4) in training; * computed here with this group's std",
}


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


def set_splits(s: Session, set_name: str) -> list[str]:
    """The splits a frozen set's records carry (empty when it was frozen without splits)."""
    from db.sets.split_summary import split_summary
    return sorted(k for k in split_summary(s, set_name) if k)


def split_counts(s: Session, set_name: str) -> dict[str, int]:
    """Puzzles per split of a frozen set, in the order train, val, test (empty when frozen without splits)."""
    from db.sets.split_summary import split_summary
    return {k: v["puzzles"] for k, v in split_summary(s, set_name).items() if k}

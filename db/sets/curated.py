"""Curated sets: the accepted puzzles frozen under a name and a content hash.

Freezing removes each puzzle's rejected distractors and re-letters the remaining options A, B, C, ...
in their original order (the answer follows), so a model never sees a gap in the labels. A distractor
is rejected when at least half of the puzzle's decisive reviewers rejected it (with one reviewer: any
reject). A puzzle left with fewer than `min_distractors` distractors is excluded and counted.

The frozen records are stored in `set_items` (canonical JSON), so later verdicts never change a set.
`content_hash` = sha256 of the records' canonical JSON lines in set order (one "\n" after each): the
exported puzzles.jsonl has exactly these bytes, so its sha256 is the set's hash.

Splits by video: freezing assigns every record a `split` ("train" / "val" / "test") by its video, so
no video has puzzles in two splits (a puzzle-level split would leak: puzzles of one video share
frames and scenes). The videos are shuffled with `split_seed` and cut by the fractions (largest
remainder, every split with a non-zero fraction gets a video when there are enough); the split is a
field of each stored record, so every export format carries it."""
from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass
from pathlib import Path

from sqlalchemy import func, insert, select
from sqlalchemy.orm import Session

from db.chunks import in_chunks
from db.models import Puzzle
from db.models.curation import CuratedSet, OptionVerdict, ReviewState, SetItem
from db.txn import run_txn
from mvp_core.atomic import atomic_write_text
from mvp_core.errors import UserError
from mvp_core.puzzle import LABELS, canonical_json

NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$")
SPLITS = ("train", "val", "test")
DEFAULT_SPLIT = {"train": 0.8, "val": 0.1, "test": 0.1}


def parse_split(text: str) -> dict[str, float]:
    """"train=0.8,val=0.1,test=0.1" -> fractions (names from SPLITS, each in [0, 1], summing to 1)."""
    out: dict[str, float] = {}
    for part in (text or "").split(","):
        name, eq, value = part.strip().partition("=")
        if not eq or name not in SPLITS or name in out:
            raise UserError(f"--split wants NAME=FRACTION pairs of {'/'.join(SPLITS)}, e.g. "
                            f"train=0.8,val=0.1,test=0.1 (got {text!r})")
        try:
            out[name] = float(value)
        except ValueError:
            raise UserError(f"--split: {value!r} is not a number") from None
    return check_split(out)


def check_split(fractions: dict[str, float]) -> dict[str, float]:
    if not fractions or any(k not in SPLITS for k in fractions):
        raise UserError(f"split names must be among {', '.join(SPLITS)}")
    if any(not 0.0 <= v <= 1.0 for v in fractions.values()) or abs(sum(fractions.values()) - 1.0) > 1e-6:
        raise UserError("split fractions must be between 0 and 1 and add up to 1")
    return {k: float(fractions[k]) for k in SPLITS if k in fractions}


def assign_splits(video_ids, fractions: dict[str, float], seed: int = 0) -> dict[str, str]:
    """{video_id: split}: a seeded shuffle of the distinct videos cut by the fractions."""
    import numpy as np
    fractions = check_split(fractions)
    videos = sorted(set(video_ids))
    order = [videos[i] for i in np.random.default_rng(seed).permutation(len(videos))]
    names = list(fractions)
    want = np.array([fractions[k] * len(videos) for k in names])
    counts = np.floor(want).astype(int)
    for i in np.argsort(-(want - counts), kind="stable")[:len(videos) - counts.sum()]:
        counts[i] += 1
    for i in range(len(names)):  # a split asked for gets a video, taken from the largest, if possible
        if fractions[names[i]] > 0 and counts[i] == 0 and counts.max() > 1:
            counts[int(np.argmax(counts))] -= 1
            counts[i] += 1
    out, pos = {}, 0
    for name, n in zip(names, counts):
        out.update({v: name for v in order[pos:pos + n]})
        pos += n
    return out


@dataclass
class FreezeConfig:
    min_distractors: int = 2       # puzzles left with fewer distractors are excluded (and counted)
    statuses: tuple = ("accepted",)  # which derived statuses go in (e.g. add "disputed" deliberately)


def content_hash(lines: list[str]) -> str:
    h = hashlib.sha256()
    for line in lines:
        h.update(line.encode("utf-8"))
        h.update(b"\n")
    return h.hexdigest()


def prune_record(record: dict, removed: set[str]) -> dict:
    """The record without the `removed` option labels, re-lettered A, B, ... (answer mapped along)."""
    kept = [o for o in record["options"] if o["label"] not in removed]
    relabel = {o["label"]: LABELS[i] for i, o in enumerate(kept)}
    missing = [a for a in record["answer"] if a not in relabel]
    if missing:
        raise ValueError(f"puzzle {record['id']}: cannot remove target options {missing}")
    out = dict(record)
    out["options"] = [{**o, "label": relabel[o["label"]]} for o in kept]
    out["answer"] = [relabel[a] for a in record["answer"]]
    return out


def rejected_options(session: Session, puzzle_ids: list[str]) -> dict[str, set[str]]:
    """{puzzle_id: labels rejected by at least half of its decisive reviewers}."""
    out: dict[str, set[str]] = {}
    for chunk in in_chunks(puzzle_ids):
        rows = session.execute(
            select(OptionVerdict.puzzle_id, OptionVerdict.label, func.count(), ReviewState.n_reviews)
            .join(ReviewState, ReviewState.puzzle_id == OptionVerdict.puzzle_id)
            .where(OptionVerdict.puzzle_id.in_(chunk), OptionVerdict.verdict == "reject")
            .group_by(OptionVerdict.puzzle_id, OptionVerdict.label, ReviewState.n_reviews))
        for pid, label, n_rej, n_reviews in rows:
            if 2 * n_rej >= max(n_reviews, 1):
                out.setdefault(pid, set()).add(label)
    return out


def _check_name(name: str) -> None:
    if not NAME_RE.match(name or ""):
        raise UserError("set name must be 1-128 characters of letters, digits, '.', '_' or '-'")


def store_set(session: Session, name: str, lines: list[str], n_excluded: int, min_distractors: int,
              params: dict, created_by: int | None = None) -> CuratedSet:
    """Insert a frozen set from its canonical record lines (used by freeze and by import)."""
    _check_name(name)
    if session.scalar(select(CuratedSet.id).where(CuratedSet.name == name)) is not None:
        raise UserError(f"set {name!r} already exists (sets never change; choose a new name)")
    cs = CuratedSet(name=name, content_hash=content_hash(lines), n_puzzles=len(lines), n_excluded=n_excluded,
                    min_distractors=min_distractors, params=params, created_by=created_by)
    session.add(cs)
    session.flush()
    session.execute(insert(SetItem), [
        {"set_id": cs.id, "position": i, "puzzle_id": json.loads(line)["id"], "record_json": line}
        for i, line in enumerate(lines)])
    return cs


def freeze_set(session: Session, name: str, min_distractors: int = 2, created_by: int | None = None,
               config: FreezeConfig | None = None, split: dict[str, float] | None = None,
               split_seed: int = 0) -> dict:
    """Freeze the accepted puzzles into a new set, split by video (`split`: fractions, default
    DEFAULT_SPLIT). Returns its summary (see `set_summary`)."""
    cfg = config or FreezeConfig(min_distractors=min_distractors)
    fractions = check_split(split or DEFAULT_SPLIT)
    if cfg.min_distractors < 0:
        raise UserError("min_distractors must be >= 0")
    _check_name(name)

    def txn():
        rows = session.execute(select(Puzzle.id, Puzzle.record_json)
                               .join(ReviewState, ReviewState.puzzle_id == Puzzle.id)
                               .where(ReviewState.status.in_(cfg.statuses))
                               .order_by(Puzzle.id)).all()
        if not rows:
            raise UserError(f"no puzzles with status {'/'.join(cfg.statuses)} to freeze")
        removed = rejected_options(session, [r.id for r in rows])
        lines, excluded = [], 0
        for pid, rec_json in rows:
            rec = prune_record(json.loads(rec_json), removed.get(pid, set()))
            if sum(o["kind"] != "target" for o in rec["options"]) < cfg.min_distractors:
                excluded += 1
                continue
            lines.append(canonical_json(rec))
        if not lines:
            raise UserError(f"all {excluded} accepted puzzles have fewer than {cfg.min_distractors} "
                            "distractors left; nothing to freeze")
        lines, videos = _with_splits(lines, fractions, split_seed)
        params = {"min_distractors": cfg.min_distractors, "statuses": list(cfg.statuses),
                  "n_removed_options": sum(len(v) for v in removed.values()),
                  "split": fractions, "split_seed": split_seed, "split_videos": videos}
        cs = store_set(session, name, lines, excluded, cfg.min_distractors, params, created_by)
        return set_summary(cs)
    return run_txn(session, txn)


def _with_splits(lines: list[str], fractions: dict[str, float], seed: int) -> tuple[list[str], dict[str, int]]:
    """The record lines with their video's split, and the number of videos per split."""
    recs = [json.loads(line) for line in lines]
    by_video = assign_splits([r["video"]["id"] for r in recs], fractions, seed)
    for r in recs:
        r["split"] = by_video[r["video"]["id"]]
    counts = {k: sum(v == k for v in by_video.values()) for k in fractions}
    return [canonical_json(r) for r in recs], counts


def set_summary(cs: CuratedSet) -> dict:
    return {"name": cs.name, "content_hash": cs.content_hash, "n_puzzles": cs.n_puzzles,
            "n_excluded": cs.n_excluded, "min_distractors": cs.min_distractors, "params": cs.params,
            "created_at": cs.created_at}


def get_set(session: Session, name: str) -> CuratedSet:
    cs = session.scalar(select(CuratedSet).where(CuratedSet.name == name))
    if cs is None:
        raise UserError(f"no curated set named {name!r}")
    return cs


def set_lines(session: Session, name: str) -> list[str]:
    cs = get_set(session, name)
    return list(session.scalars(select(SetItem.record_json).where(SetItem.set_id == cs.id)
                                .order_by(SetItem.position)))


def write_lines(lines: list[str], out: Path) -> Path:
    """Canonical record lines to `out`, one per line, atomically (a temp file renamed into place):
    the file's sha256 is then the set's content hash."""
    out.parent.mkdir(parents=True, exist_ok=True)
    atomic_write_text(out, "".join(line + "\n" for line in lines))
    return out


TRAIN_SPLITS = ("train",)    # what training reads of a set unless a split is named (no val/test leak)


def snapshot_set(session: Session, name: str, out: Path,
                 splits: tuple[str, ...] = TRAIN_SPLITS) -> tuple[Path, str, tuple[str, ...]]:
    """The set's records OF THESE SPLITS as the puzzles file a trainer reads (docs/ARCHITECTURE.md,
    "Curated set and snapshot"): (path, the set's content hash, the splits kept). Training never reads
    a split it is evaluated on unless asked (it would score memory, not learning); an empty result is refused. A set
    whose records carry no split at all (imported without one) has no held-out part: all of it is
    written and the splits kept are ()."""
    lines = set_lines(session, name)
    if not lines:
        raise UserError(f"curated set {name!r} holds no puzzles")
    unknown = set(splits) - set(SPLITS)
    if unknown:
        raise UserError(f"unknown split {', '.join(sorted(unknown))}; splits are {', '.join(SPLITS)}")
    found = [json.loads(line).get("split") for line in lines]
    if not any(found):
        return write_lines(lines, Path(out)), get_set(session, name).content_hash, ()
    keep = [line for line, split in zip(lines, found) if split in splits]
    if not keep:
        have = sorted({str(json.loads(line).get("split")) for line in lines})
        raise UserError(f"curated set {name!r} has no puzzles in split {'/'.join(splits)} (it has: {', '.join(have)})")
    return write_lines(keep, Path(out)), get_set(session, name).content_hash, tuple(splits)


def load_set(session: Session, name: str) -> list[dict]:
    """The puzzle records of a set (rejected distractors removed), in set order."""
    return [json.loads(line) for line in set_lines(session, name)]


def list_sets(session: Session) -> list[dict]:
    return [set_summary(cs) for cs in session.scalars(select(CuratedSet).order_by(CuratedSet.created_at))]


def verify_set(session: Session, name: str) -> bool:
    """True when the stored records still hash to the set's content hash."""
    return content_hash(set_lines(session, name)) == get_set(session, name).content_hash

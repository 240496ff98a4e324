"""Human answers and the human baseline.

A curator answers a puzzle blind, as the model must (the ordered labels that fill the gap), before
they see the targets and vet the distractors. `record_answer` scores that answer with the model's
reward (`mvp_core.reward.score_prediction`: the format term counts as met) and stores it once per
curator and puzzle. The baseline functions average it per puzzle, per video and over a set of
puzzles, so eval tables and the Stats page can put humans beside the model and the shortcut solvers;
a puzzle most of whose curators answered it wrong is flagged as possibly ambiguous.

The 95% interval is a percentile bootstrap over puzzles, the audit's own (`mvp_core.synth.audit`),
so humans and the shortcut solvers get the same kind of interval."""
from __future__ import annotations

import json
from collections import defaultdict

import numpy as np
from sqlalchemy import select
from sqlalchemy.orm import Session

from db.models import Puzzle, Video
from db.models.curation import CuratedSet, SetItem, User
from db.models.human import HumanAnswer
from db.txn import run_txn
from mvp_core.errors import UserError
from mvp_core.reward import score_prediction
from mvp_core.stats.bootstrap import ci

AMBIGUOUS_BELOW = 0.5      # a puzzle whose mean human exact match is below this is flagged
MAX_SECONDS = 24 * 3600.0


def _answer_dict(a: HumanAnswer) -> dict:
    return {"puzzle_id": a.puzzle_id, "user_id": a.user_id, "labels": list(a.labels), "exact": a.exact,
            "selection": a.selection, "order": a.order, "total": a.total, "seconds": a.seconds}


def answer_of(session: Session, user_id: int, puzzle_id: str) -> dict | None:
    """This curator's answer to this puzzle, or None while they have not answered it."""
    a = session.scalar(select(HumanAnswer).where(HumanAnswer.user_id == user_id,
                                                 HumanAnswer.puzzle_id == puzzle_id))
    return None if a is None else _answer_dict(a)


def record_answer(session: Session, user_id: int, puzzle_id: str, labels: list[str],
                  seconds: float) -> dict:
    """Score and store a curator's blind answer (m distinct labels of the pool, in order). A second
    answer to the same puzzle is refused: after the first, the curator has seen the targets."""
    if not isinstance(labels, list) or not all(isinstance(x, str) for x in labels):
        raise UserError("an answer is a list of option labels")
    if not isinstance(seconds, (int, float)) or isinstance(seconds, bool) or not 0 <= seconds <= MAX_SECONDS:
        raise UserError(f"seconds must be a number between 0 and {MAX_SECONDS:.0f}")

    def txn():
        row = session.get(Puzzle, puzzle_id)
        if row is None:
            raise UserError(f"no puzzle {puzzle_id!r}")
        if session.get(User, user_id) is None:
            raise UserError(f"no user with id {user_id}")
        rec = json.loads(row.record_json)
        pool = [o["label"] for o in rec["options"]]
        m = len(rec["answer"])
        if len(labels) != m or len(set(labels)) != m or any(x not in pool for x in labels):
            raise UserError(f"pick {m} different options of {', '.join(pool)} in the order they fill the gap")
        if answer_of(session, user_id, puzzle_id) is not None:
            raise UserError("you already answered this puzzle")
        t = score_prediction(labels, rec["answer"], pool)
        a = HumanAnswer(puzzle_id=puzzle_id, user_id=user_id, labels=list(labels), selection=t.selection,
                        order=t.order, exact=t.exact, total=t.total, seconds=float(seconds))
        session.add(a)
        session.flush()
        return {**_answer_dict(a), "answer": list(rec["answer"])}
    return run_txn(session, txn)


def per_puzzle(session: Session, puzzle_ids: list[str] | None = None) -> list[dict]:
    """One row per answered puzzle: answers, mean exact match and reward, video, and the ambiguity
    flag (mean exact below AMBIGUOUS_BELOW)."""
    q = (select(HumanAnswer.puzzle_id, HumanAnswer.exact, HumanAnswer.total, HumanAnswer.seconds,
                Puzzle.video_id, Video.path)
         .join(Puzzle, Puzzle.id == HumanAnswer.puzzle_id).join(Video, Video.id == Puzzle.video_id))
    acc: dict[str, dict] = {}
    wanted = None if puzzle_ids is None else set(puzzle_ids)
    for pid, exact, total, secs, vid, vpath in session.execute(q):
        if wanted is not None and pid not in wanted:
            continue
        r = acc.setdefault(pid, {"puzzle_id": pid, "video_id": vid, "video": vpath.rsplit("/", 1)[-1],
                                 "exacts": [], "totals": [], "secs": []})
        r["exacts"].append(exact)
        r["totals"].append(total)
        r["secs"].append(secs)
    out = []
    for pid in sorted(acc):
        r = acc[pid]
        exact = float(np.mean(r["exacts"]))
        out.append({"puzzle_id": pid, "video_id": r["video_id"], "video": r["video"],
                    "answers": len(r["exacts"]), "exact": round(exact, 4),
                    "reward": round(float(np.mean(r["totals"])), 4),
                    "median_seconds": round(float(np.median(r["secs"])), 2),
                    "possibly_ambiguous": exact < AMBIGUOUS_BELOW})
    return out


def summarize(rows: list[dict]) -> dict:
    """Mean exact match and reward over puzzles (each puzzle weighs the same), with 95% intervals."""
    ex, rw, videos = [r["exact"] for r in rows], [r["reward"] for r in rows], [r["video_id"] for r in rows]
    return {"puzzles": len(rows), "answers": sum(r["answers"] for r in rows),
            "exact": round(float(np.mean(ex)), 4) if ex else None, "exact_ci": ci(ex, videos),
            "reward": round(float(np.mean(rw)), 4) if rw else None, "reward_ci": ci(rw, videos),
            "possibly_ambiguous": sum(r["possibly_ambiguous"] for r in rows)}


def per_video(session: Session, puzzle_ids: list[str] | None = None) -> list[dict]:
    """The baseline per source video (by file name)."""
    by: dict[str, list[dict]] = defaultdict(list)
    for r in per_puzzle(session, puzzle_ids):
        by[r["video_id"]].append(r)
    return [{"video": rows[0]["video"], "video_id": vid, **summarize(rows)}
            for vid, rows in sorted(by.items(), key=lambda kv: kv[1][0]["video"])]


def set_puzzle_ids(session: Session, set_name: str, split: str | None = None) -> list[str]:
    """The puzzle ids of a frozen set (optionally one split, when the set records carry splits)."""
    cs = session.scalar(select(CuratedSet).where(CuratedSet.name == set_name))
    if cs is None:
        raise UserError(f"no curated set named {set_name!r}")
    ids = []
    for pid, rec in session.execute(select(SetItem.puzzle_id, SetItem.record_json).where(SetItem.set_id == cs.id)):
        if split is None or json.loads(rec).get("split") == split:
            ids.append(pid)
    return ids


def human_baseline(session: Session, set_name: str | None = None, split: str | None = None,
                   puzzle_ids: list[str] | None = None) -> dict:
    """The human baseline for eval tables: {"puzzles", "answers", "exact", "exact_ci", "reward",
    "reward_ci", "possibly_ambiguous"} over the answered puzzles of a set (or split, or id list, or
    everything). Exact match and reward are on the original puzzle (a frozen set only removes
    rejected distractors and re-letters, which changes neither for a list of targets)."""
    if set_name is not None:
        puzzle_ids = set_puzzle_ids(session, set_name, split)
    return summarize(per_puzzle(session, puzzle_ids))


def possibly_ambiguous(session: Session) -> list[dict]:
    """Puzzles the curators mostly failed: a sign the gap has more than one fitting answer."""
    return [r for r in per_puzzle(session) if r["possibly_ambiguous"]]

"""The puzzle use of steering: good/bad labels for puzzles from a model's scored answers or from
curators' verdicts, and exact/reward of greedy answers with and without steering on a set split."""
from __future__ import annotations

import numpy as np

from mvp_core.errors import UserError
from mvp_core.stats.bootstrap import ci


def answer_is_good(exact: float, total: float, reward_threshold: float) -> bool:
    """Good = the exact answer, or a reward at least `reward_threshold`; anything else is wrong."""
    return exact >= 1.0 or total >= reward_threshold


def puzzle_labels(answers: list[dict], reward_threshold: float = 1.0) -> dict[str, bool]:
    """{puzzle_id: bad?} from answer rows (puzzle_id, exact, total). One state per prompt, so a
    puzzle answered by several samples is bad when fewer than half of its answers are good."""
    by: dict[str, list[bool]] = {}
    for a in answers:
        by.setdefault(a["puzzle_id"], []).append(answer_is_good(a["exact"], a["total"], reward_threshold))
    return {pid: float(np.mean(v)) < 0.5 for pid, v in by.items()}


def verdict_labels(verdicts: list[dict]) -> dict[str, bool]:
    """{puzzle_id: bad?} from curators' verdict rows (puzzle_id, verdict): a puzzle is good when more
    curators accepted it than rejected it, bad when more rejected it. Skips carry no opinion, and a
    tie or a puzzle with only skips gets no label (it is left out rather than guessed)."""
    votes: dict[str, int] = {}
    for v in verdicts:
        if v["verdict"] not in ("accept", "reject", "skip"):
            raise UserError(f"unknown curator verdict {v['verdict']!r} for puzzle {v['puzzle_id']}")
        votes[v["puzzle_id"]] = votes.get(v["puzzle_id"], 0) + {"accept": 1, "reject": -1, "skip": 0}[v["verdict"]]
    return {pid: n < 0 for pid, n in votes.items() if n != 0}


def greedy_rows(model, processor, records: list[dict], load_frame, max_new_tokens: int, steering=None,
                pcfg=None, progress: bool = False) -> list[dict]:
    """One greedy answer per puzzle, scored (rows of mvp_core.model.rollout), optionally steered."""
    import contextlib

    from mvp_core.model.rollout import GenConfig, run_rollouts
    if not records:
        raise UserError("no puzzles to answer")
    gcfg = GenConfig(num_generations=1, do_sample=False, max_new_tokens=max_new_tokens)
    with steering if steering is not None else contextlib.nullcontext():
        return run_rollouts(model, processor, records, load_frame, pcfg, gcfg, progress=progress)


def compare(plain: list[dict], steered: list[dict]) -> dict:
    """Exact and reward, unsteered vs steered, with 95% bootstrap intervals and the paired change."""
    out = {"puzzles": len(plain)}
    s_by = {r["puzzle_id"]: r for r in steered}
    for term in ("exact", "total"):
        a = np.array([r[term] for r in plain])
        b = np.array([s_by[r["puzzle_id"]][term] for r in plain])
        videos = [r["video_id"] for r in plain]      # intervals resample videos (mvp_core/stats/bootstrap.py)
        out[term] = {"unsteered": float(a.mean()), "unsteered_ci": ci(a, videos),
                     "steered": float(b.mean()), "steered_ci": ci(b, videos),
                     "change": float((b - a).mean()), "change_ci": ci(b - a, videos)}
    out["answers_changed"] = sum(r["completion"] != s_by[r["puzzle_id"]]["completion"] for r in plain)
    return out

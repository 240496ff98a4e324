"""The shortcut audit: can cheap pixel heuristics (mvp_core.synth.solvers) solve the puzzles? Per
solver: mean reward and exact match with 95% bootstrap intervals, overall and per distractor kind,
how often it picks each kind of distractor, and a flag when its exact match beats chance by more
than `flag_factor` (the lower end of its interval above flag_factor x chance). Also the ambiguity
guard re-checked from the stored frames (decoded and re-embedded, not the synthesis' bookkeeping).
`audit_puzzles` also returns each solver's result on each puzzle, which the store keeps per puzzle
(docs/store.md, "Audit per puzzle")."""
from __future__ import annotations

import math
from collections import defaultdict
from typing import NamedTuple

import numpy as np

from mvp_core.puzzle import Puzzle
from mvp_core.reward import score_prediction
from mvp_core.stats.bootstrap import ci
from mvp_core.synth.solvers import SOLVERS, FeatureCache, FrameSize, LoadFrame

__all__ = ["SOLVERS", "SHORTCUTS", "FeatureCache", "PuzzleResult", "audit", "audit_puzzles", "chance_exact",
           "distractor_kind", "format_table", "guard_check"]
FLAG_FACTOR = 10.0      # a solver whose exact match is above 10x chance (lower 95% bound) is flagged
# "random" measures chance: a puzzle it happens to solve has no shortcut, so it never flags a puzzle
SHORTCUTS = tuple(n for n in SOLVERS if n != "random")


class PuzzleResult(NamedTuple):
    """One solver's answer on one puzzle, scored by the one reward."""
    puzzle_id: str
    solver: str
    exact: float
    reward: float


def distractor_kind(p: Puzzle) -> str:
    kinds = sorted({o.kind for o in p.options if o.kind != "target"})
    return "+".join(kinds) or "none"


def chance_exact(p: Puzzle) -> float:
    """Probability that m labels drawn in random order from the pool equal the answer."""
    return 1.0 / math.perm(len(p.options), p.mask.length)


def audit(puzzles: list[Puzzle], load_frame: LoadFrame, solvers: list[str] | None = None,
          frame_size: FrameSize | None = None, flag_factor: float = FLAG_FACTOR, check_guard: bool = True) -> dict:
    """The audit report (see the module docstring); JSON-serialisable."""
    return audit_puzzles(puzzles, load_frame, solvers, frame_size, flag_factor, check_guard)[0]


def audit_puzzles(puzzles: list[Puzzle], load_frame: LoadFrame, solvers: list[str] | None = None,
                  frame_size: FrameSize | None = None, flag_factor: float = FLAG_FACTOR,
                  check_guard: bool = True) -> tuple[dict, list[PuzzleResult]]:
    """(the audit report, every solver's result on every puzzle): one pass for both."""
    feats = FeatureCache(load_frame, frame_size)
    names = solvers or list(SOLVERS)
    rows: dict[str, dict[str, list]] = {n: defaultdict(list) for n in names}
    picks: dict[str, dict[str, int]] = {n: defaultdict(int) for n in names}
    offered: dict[str, int] = defaultdict(int)
    results: list[PuzzleResult] = []
    for p in puzzles:
        pool = {o.label: o.kind for o in p.options}
        kind = distractor_kind(p)
        for o in p.options:
            offered[o.kind] += 1
        for n in names:
            pred = SOLVERS[n](p, feats)
            t = score_prediction(pred, p.answer, list(pool))
            results.append(PuzzleResult(p.id, n, float(t.exact), float(t.total)))
            for group in ("all", kind):
                rows[n][group].append((t.total, t.exact, p.video.id))
            for lab in set(pred) & set(pool):
                picks[n][pool[lab]] += 1
    groups = sorted({g for n in names for g in rows[n]}, key=lambda g: (g != "all", g))
    report = {"n_puzzles": len(puzzles), "flag_factor": flag_factor, "groups": {},
              "pick_rate_by_kind": {n: {k: round(picks[n][k] / offered[k], 4) for k in sorted(offered)}
                                    for n in names}}
    for g in groups:
        members = [p for p in puzzles if g == "all" or distractor_kind(p) == g]
        chance = float(np.mean([chance_exact(p) for p in members])) if members else 0.0
        solver_rows = {n: _solver_row(rows[n][g], chance, flag_factor) for n in names}
        report["groups"][g] = {"n": len(members), "chance_exact": chance, "solvers": solver_rows,
                               "flagged": [n for n in names if solver_rows[n]["flagged"]]}
    if check_guard:
        report["guard"] = guard_check(puzzles, feats)
    return report, results


def _solver_row(rows: list[tuple[float, float, str]], chance: float, flag_factor: float) -> dict:
    """A solver's mean reward and exact match, intervals resampling videos (mvp_core/stats/bootstrap.py)."""
    rewards, exacts, videos = [r[0] for r in rows], [r[1] for r in rows], [r[2] for r in rows]
    ex_ci = ci(exacts, videos)
    return {"mean_reward": _mean(rewards), "reward_ci95": list(ci(rewards, videos)),
            "exact": _mean(exacts), "exact_ci95": list(ex_ci),
            "flagged": bool(rows) and ex_ci[0] > flag_factor * chance}


def guard_check(puzzles: list[Puzzle], feats: FeatureCache) -> dict:
    """Near-duplicate pairs (similarity >= the puzzle's kappa) recomputed from the stored frames with
    the pixel embedder: two targets; a target and a distractor; a distractor and a shown frame; a
    target and a shown frame. Puzzles made with another embedder are counted, not checked."""
    counts = {"checked": 0, "other_embedder": 0, "target_target": 0, "target_distractor": 0,
              "distractor_shown": 0, "target_shown": 0, "puzzles_with_any": 0}
    for p in puzzles:
        if p.params.get("embedder", "pixel") != "pixel":
            counts["other_embedder"] += 1
            continue
        kappa = float(p.params["kappa"])
        E = lambda uris: np.stack([feats.embedding(u) for u in uris])
        T = E([o.uri for o in p.options if o.kind == "target"])
        D = E([o.uri for o in p.options if o.kind != "target"])
        S = E([f.uri for i, f in enumerate(p.frames) if not (p.mask.start <= i < p.mask.start + p.mask.length)])
        tt = T @ T.T
        found = {"target_target": int((np.triu(tt, 1) >= kappa).sum()),
                 "target_distractor": int((D @ T.T >= kappa).sum()),
                 "distractor_shown": int((D @ S.T >= kappa).sum()),
                 "target_shown": int((T @ S.T >= kappa).sum())}
        for k, v in found.items():
            counts[k] += v
        counts["checked"] += 1
        counts["puzzles_with_any"] += int(any(found.values()))
    return counts


def _mean(xs: list[float]) -> float:
    return float(np.mean(xs)) if xs else 0.0


def format_table(report: dict) -> str:
    lines = [(f"shortcut audit over {report['n_puzzles']} puzzles (flag: exact above "
              f"{report['flag_factor']:g}x chance at the lower 95% bound)"),
             f"{'group':<26}{'n':>5}  {'solver':<18}{'reward [95% CI]':>24}{'exact [95% CI]':>24}  flag"]
    for g, r in report["groups"].items():
        lines.append(f"{g:<26}{r['n']:>5}  {'(chance exact)':<18}{'':>24}{r['chance_exact']:>24.4f}")
        for n, s in r["solvers"].items():
            rw = f"{s['mean_reward']:.3f} [{s['reward_ci95'][0]:.3f}, {s['reward_ci95'][1]:.3f}]"
            ex = f"{s['exact']:.3f} [{s['exact_ci95'][0]:.3f}, {s['exact_ci95'][1]:.3f}]"
            lines.append(f"{'':<26}{'':>5}  {n:<18}{rw:>24}{ex:>24}  {'FLAG' if s['flagged'] else ''}")
    if "guard" in report:
        g = report["guard"]
        lines.append(f"guard from stored frames: {g['checked']} puzzles checked, {g['puzzles_with_any']} with a "
                     f"near-duplicate (target-target {g['target_target']}, target-distractor {g['target_distractor']}, "
                     f"distractor-shown {g['distractor_shown']}, target-shown {g['target_shown']})")
    return "\n".join(lines)

"""The learning-proof numbers: each system's exact match and mean reward on held-out
puzzles with intervals that resample videos, chance computed exactly, and paired model differences.
Read by bench/learning_stats.py, bench/learning_pool.py and the tests; the intervals are the one
bootstrap's (mvp_core/stats/bootstrap.py)."""
from __future__ import annotations

import itertools
from collections.abc import Hashable, Mapping, Sequence

import numpy as np

from mvp_core.puzzle import Puzzle
from mvp_core.reward import score_prediction
from mvp_core.stats.bootstrap import Interval, cluster_mean_ci


def chance_scores(pz: Puzzle) -> tuple[float, float]:
    """(expected exact, expected reward) of a random ordered m-subset of the pool."""
    pool = [o.label for o in pz.options]
    terms = [score_prediction(list(p), pz.answer, pool) for p in itertools.permutations(pool, pz.mask.length)]
    return float(np.mean([t.exact for t in terms])), float(np.mean([t.total for t in terms]))


def system_scores(puzzles: list[Puzzle], reports: Mapping[str, dict]) -> dict[str, dict[str, np.ndarray]]:
    """{system: {"exact": (n,), "reward": (n,)}} in the order of `puzzles`. `reports` maps a model
    name to its `mvp eval` JSON report; the solvers' labels are read from the first report."""
    ids = [p.id for p in puzzles]
    chance = [chance_scores(p) for p in puzzles]
    out = {"chance": {"exact": np.array([c[0] for c in chance]), "reward": np.array([c[1] for c in chance])}}
    first = next(iter(reports.values()))
    rows = {r["id"]: r for r in first["puzzles"]}
    for s in [s for s in first["systems"] if s != "model"]:
        t = [score_prediction(rows[p.id][f"{s}_labels"], p.answer, [o.label for o in p.options]) for p in puzzles]
        out[s] = {"exact": np.array([x.exact for x in t]), "reward": np.array([x.total for x in t])}
    for name, rep in reports.items():
        r = {x["id"]: x for x in rep["puzzles"]}
        out[name] = {"exact": np.array([r[i]["model_exact"] for i in ids]),
                     "reward": np.array([r[i]["model_total"] for i in ids])}
    return out


def _cell(iv: Interval) -> tuple[float, list[float]]:
    return iv.mean, [iv.lo, iv.hi]


def report(puzzles: list[Puzzle], scores: Mapping[str, dict], seed: int = 0) -> dict:
    """The REPORT.json layout: systems with means and intervals, and GRPO minus SFT (paired)."""
    videos = [p.video.id for p in puzzles]
    systems = {}
    for name, s in scores.items():
        (exact, exact_ci), (reward, reward_ci) = (_cell(cluster_mean_ci(s[k], videos, seed=seed))
                                                  for k in ("exact", "reward"))
        systems[name] = {"exact": exact, "reward": reward, "exact_ci": exact_ci, "reward_ci": reward_ci}
    out = {"systems": systems, "n_test": len(puzzles), "n_test_videos": len(set(videos))}
    if "grpo" in scores and "sft" in scores:
        d = {}
        for k in ("reward", "exact"):
            d[k], d[f"{k}_ci"] = _cell(cluster_mean_ci(scores["grpo"][k] - scores["sft"][k], videos, seed=seed))
        out["grpo_minus_sft"] = d
    return out


def paired_diffs(video_of: Mapping[str, Hashable], a: Mapping[str, float], b: Mapping[str, float]
                 ) -> tuple[list[float], list[Hashable]]:
    """a - b per puzzle id both scored (sorted by id), with each puzzle's video."""
    ids = sorted(a.keys() & b.keys())
    return [a[i] - b[i] for i in ids], [video_of[i] for i in ids]


def pooled_diff_ci(runs: Sequence[tuple[Sequence[float], Sequence[Hashable]]], seed: int = 0) -> Interval:
    """Mean paired difference over every puzzle of every run; videos resampled within each run (a run
    keeps its number of videos), so independent runs pool without mixing their sizes."""
    values = [x for diffs, _ in runs for x in diffs]
    videos = [v for _, vids in runs for v in vids]
    strata = [i for i, (diffs, _) in enumerate(runs) for _ in diffs]
    return cluster_mean_ci(values, videos, seed=seed, strata=strata)

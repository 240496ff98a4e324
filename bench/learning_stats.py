"""Scores per held-out puzzle for every system of the learning proof, 95% bootstrap intervals
(resampling whole videos: puzzles of one video are not independent), the table, the plot.

Systems: `chance` (the expected score of a uniformly random ordered pick of m options, computed
exactly), the shortcut audit's solvers (mvp_core.synth.audit.SOLVERS), and the models, read
from `mvp eval` reports (their per-puzzle `model_total` / `model_exact`)."""
from __future__ import annotations

import itertools
import json
from pathlib import Path

import numpy as np

from mvp_core.puzzle import Puzzle
from mvp_core.reward import score_prediction

N_BOOT = 2000


def chance_scores(pz: Puzzle) -> tuple[float, float]:
    """(expected exact, expected reward) of a random ordered m-subset of the pool."""
    pool = [o.label for o in pz.options]
    picks = list(itertools.permutations(pool, pz.mask.length))
    terms = [score_prediction(list(p), pz.answer, pool) for p in picks]
    return float(np.mean([t.exact for t in terms])), float(np.mean([t.total for t in terms]))


def system_scores(puzzles: list[Puzzle], reports: dict[str, dict]) -> dict[str, dict[str, np.ndarray]]:
    """{system: {"exact": (n,), "reward": (n,)}} in the order of `puzzles`. `reports` maps a model
    name to its `mvp eval` JSON report; the solvers' labels are read from the first report."""
    ids = [p.id for p in puzzles]
    out = {"chance": {"exact": np.array([chance_scores(p)[0] for p in puzzles]),
                      "reward": np.array([chance_scores(p)[1] for p in puzzles])}}
    first = next(iter(reports.values()))
    rows = {r["id"]: r for r in first["puzzles"]}
    solvers = [s for s in first["systems"] if s != "model"]
    for s in solvers:
        t = [score_prediction(rows[p.id][f"{s}_labels"], p.answer, [o.label for o in p.options]) for p in puzzles]
        out[s] = {"exact": np.array([x.exact for x in t]), "reward": np.array([x.total for x in t])}
    for name, rep in reports.items():
        r = {x["id"]: x for x in rep["puzzles"]}
        out[name] = {"exact": np.array([r[i]["model_exact"] for i in ids]),
                     "reward": np.array([r[i]["model_total"] for i in ids])}
    return out


def cluster_bootstrap(values: np.ndarray, clusters: np.ndarray, seed: int = 0, n_boot: int = N_BOOT) -> list[float]:
    """95% percentile interval of the mean, resampling clusters (videos) with replacement."""
    rng = np.random.default_rng(seed)
    keys = np.unique(clusters)
    groups = [values[clusters == k] for k in keys]
    sums = np.array([g.sum() for g in groups])
    counts = np.array([len(g) for g in groups])
    idx = rng.integers(0, len(keys), size=(n_boot, len(keys)))
    means = sums[idx].sum(1) / counts[idx].sum(1)
    return [float(np.percentile(means, 2.5)), float(np.percentile(means, 97.5))]


def report(puzzles: list[Puzzle], scores: dict, seed: int = 0) -> dict:
    """The REPORT.json layout: systems with means and intervals, and GRPO minus SFT (paired)."""
    videos = np.array([p.video.id for p in puzzles])
    systems = {}
    for name, s in scores.items():
        systems[name] = {"exact": float(s["exact"].mean()), "reward": float(s["reward"].mean()),
                         "exact_ci": cluster_bootstrap(s["exact"], videos, seed),
                         "reward_ci": cluster_bootstrap(s["reward"], videos, seed)}
    out = {"systems": systems, "n_test": len(puzzles), "n_test_videos": int(len(np.unique(videos)))}
    if "grpo" in scores and "sft" in scores:
        diff = {k: scores["grpo"][k] - scores["sft"][k] for k in ("exact", "reward")}
        out["grpo_minus_sft"] = {"reward": float(diff["reward"].mean()),
                                 "reward_ci": cluster_bootstrap(diff["reward"], videos, seed),
                                 "exact": float(diff["exact"].mean()),
                                 "exact_ci": cluster_bootstrap(diff["exact"], videos, seed)}
    return out


def table(rep: dict) -> str:
    lines = [f"held-out test: {rep['n_test']} puzzles from {rep['n_test_videos']} videos never trained on",
             f"{'system':<11} {'exact':>7} {'95% CI':>17} {'reward':>8} {'95% CI':>17}"]
    for name, s in rep["systems"].items():
        lines.append(f"{name:<11} {s['exact']:7.3f} [{s['exact_ci'][0]:6.3f}, {s['exact_ci'][1]:6.3f}] "
                     f"{s['reward']:8.3f} [{s['reward_ci'][0]:6.3f}, {s['reward_ci'][1]:6.3f}]")
    d = rep.get("grpo_minus_sft")
    if d:
        lines.append(f"{'grpo - sft':<11} {d['exact']:7.3f} [{d['exact_ci'][0]:6.3f}, {d['exact_ci'][1]:6.3f}] "
                     f"{d['reward']:8.3f} [{d['reward_ci'][0]:6.3f}, {d['reward_ci'][1]:6.3f}]")
    return "\n".join(lines)


def plot(runs: dict[str, Path], out: Path) -> Path | None:
    """Training reward (GRPO) / token accuracy (SFT) and held-out reward against step, one panel
    per run; None when matplotlib is missing (the table and JSON do not need it)."""
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return None
    fig, axes = plt.subplots(1, len(runs), figsize=(5 * len(runs), 3.5), squeeze=False)
    for ax, (name, run_dir) in zip(axes[0], runs.items()):
        rows = [json.loads(x) for x in (run_dir / "metrics.jsonl").read_text().splitlines() if x.strip()]
        key = "reward" if rows and "reward" in rows[0] else "token_accuracy"
        ax.plot([r["step"] for r in rows], [r.get(key) for r in rows], label=f"train {key}", alpha=0.6)
        ev = [r for r in rows if "eval_reward" in r]
        ax.plot([r["step"] for r in ev], [r["eval_reward"] for r in ev], "o-", label="held-out reward")
        ax.plot([r["step"] for r in ev], [r["eval_exact"] for r in ev], "s--", label="held-out exact")
        ax.set_title(name)
        ax.set_xlabel("step")
        ax.set_ylim(0, 1)
        ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(out, dpi=100)
    plt.close(fig)
    return out

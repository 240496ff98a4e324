"""Scores per held-out puzzle for every system of the learning proof, 95% bootstrap intervals
(resampling whole videos: puzzles of one video are not independent), the table, the plot.

The numbers are mvp_core/stats/learning.py's; this script prints and plots them.
Systems: `chance` (the expected score of a uniformly random ordered pick of m options, computed
exactly), the shortcut audit's solvers (mvp_core.synth.audit.SOLVERS), and the models, read
from `mvp eval` reports (their per-puzzle `model_total` / `model_exact`)."""
from __future__ import annotations

import json
from pathlib import Path

from mvp_core.stats.learning import chance_scores, report, system_scores  # noqa: F401  (this script's API)


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

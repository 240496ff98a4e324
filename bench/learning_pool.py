"""GRPO minus SFT on held-out puzzles, pooled over several learning-proof runs (each its own videos
and seed): `python bench/learning_pool.py WORK [WORK ...]`, where each WORK is a
`bench/learning_proof.py --work` directory with eval/sft.json, eval/grpo.json and test/puzzles.jsonl.

Prints each run's paired difference of mean reward and the pooled one, with a 95% bootstrap interval
that resamples whole videos within each run (puzzles of one video are not independent; runs are).
docs/BENCHMARKS.md ("Learning proof") records what it printed."""
from __future__ import annotations

import argparse
import json
from pathlib import Path

from mvp_core.stats.learning import paired_diffs, pooled_diff_ci


def run_diffs(work: Path) -> tuple[list[float], list[str]]:
    """grpo - sft reward per held-out puzzle of one learning-proof work directory, with its video."""
    video = {}
    for line in (work / "test" / "puzzles.jsonl").read_text().splitlines():
        if line.strip():
            rec = json.loads(line)
            video[rec["id"]] = rec["video"]["id"]

    def totals(name: str) -> dict[str, float]:
        return {p["id"]: p["model_total"] for p in json.loads((work / "eval" / f"{name}.json").read_text())["puzzles"]}
    return paired_diffs(video, totals("grpo"), totals("sft"))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("works", nargs="+", type=Path, help="learning-proof work directories")
    ap.add_argument("--out", type=Path, help="also write the numbers as JSON (REPORT.json's grpo_minus_sft shape)")
    args = ap.parse_args(argv)
    runs, rows = [], []
    for w in args.works:
        r = run_diffs(w)
        iv = pooled_diff_ci([r])
        print(f"{w}: {iv.n} puzzles, {iv.clusters} videos, grpo - sft reward {iv.mean:+.4f} [{iv.lo:+.4f}, {iv.hi:+.4f}]")
        runs.append(r)
        rows.append({"work": str(w), "n_test": iv.n, "n_videos": iv.clusters, "reward": iv.mean, "reward_ci": [iv.lo, iv.hi]})
    pooled = pooled_diff_ci(runs)
    point, lo, hi = pooled.mean, pooled.lo, pooled.hi
    n = sum(row["n_test"] for row in rows)
    print(f"pooled: {n} puzzles, grpo - sft reward {point:+.4f} [{lo:+.4f}, {hi:+.4f}]")
    if args.out:
        args.out.write_text(json.dumps({"runs": rows, "grpo_minus_sft": {"reward": point, "reward_ci": [lo, hi]},
                                        "n_test": n, "n_videos": sum(row["n_videos"] for row in rows)}, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

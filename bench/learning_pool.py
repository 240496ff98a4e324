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

import numpy as np

N_BOOT = 2000


def video_diffs(work: Path) -> list[np.ndarray]:
    """Per held-out video, grpo - sft mean reward of each of its puzzles (paired by puzzle id)."""
    video = {}
    for line in (work / "test" / "puzzles.jsonl").read_text().splitlines():
        if line.strip():
            rec = json.loads(line)
            video[rec["id"]] = rec["video"]["id"]
    sft = {p["id"]: p["model_total"] for p in json.loads((work / "eval" / "sft.json").read_text())["puzzles"]}
    grpo = {p["id"]: p["model_total"] for p in json.loads((work / "eval" / "grpo.json").read_text())["puzzles"]}
    by: dict[str, list[float]] = {}
    for pid in sorted(sft.keys() & grpo.keys()):
        by.setdefault(video[pid], []).append(grpo[pid] - sft[pid])
    return [np.array(v) for v in by.values()]


def pooled(runs: list[list[np.ndarray]], seed: int = 0) -> tuple[float, float, float]:
    """(mean over every puzzle of every run, 2.5th and 97.5th percentiles of the bootstrap)."""
    rng = np.random.default_rng(seed)
    point = float(np.concatenate([np.concatenate(r) for r in runs]).mean())
    boots = []
    for _ in range(N_BOOT):
        parts = [r[i] for r in runs for i in rng.integers(0, len(r), len(r))]
        boots.append(np.concatenate(parts).mean())
    lo, hi = np.percentile(boots, [2.5, 97.5])
    return point, float(lo), float(hi)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("works", nargs="+", type=Path, help="learning-proof work directories")
    ap.add_argument("--out", type=Path, help="also write the numbers as JSON (REPORT.json's grpo_minus_sft shape)")
    args = ap.parse_args(argv)
    runs, rows = [], []
    for w in args.works:
        r = video_diffs(w)
        point, lo, hi = pooled([r])
        n = sum(len(v) for v in r)
        print(f"{w}: {n} puzzles, {len(r)} videos, grpo - sft reward {point:+.4f} [{lo:+.4f}, {hi:+.4f}]")
        runs.append(r)
        rows.append({"work": str(w), "n_test": n, "n_videos": len(r), "reward": point, "reward_ci": [lo, hi]})
    point, lo, hi = pooled(runs)
    n = sum(row["n_test"] for row in rows)
    print(f"pooled: {n} puzzles, grpo - sft reward {point:+.4f} [{lo:+.4f}, {hi:+.4f}]")
    if args.out:
        args.out.write_text(json.dumps({"runs": rows, "grpo_minus_sft": {"reward": point, "reward_ci": [lo, hi]},
                                        "n_test": n, "n_videos": sum(row["n_videos"] for row in rows)}, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

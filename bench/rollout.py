"""Rollout throughput on the tiny Qwen2.5-VL: answers/s and where the time goes (building inputs
from the frame store, generation, decoding + scoring), for a few G / batch settings side by side.

Usage: .venv/bin/python bench/rollout.py [--repeats 3] [--max-new-tokens 64] [--device cpu]
Puzzles come from `mvp synth` over the real sample videos (bikes.mp4, trailer_bbb.mp4) in a temp dir."""
from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "scripts"))


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--max-new-tokens", type=int, default=64)
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--per-video", type=int, default=2)
    ap.add_argument("--threads", default="1,2", help="torch CPU thread counts to compare")
    args = ap.parse_args()

    import sample_videos
    import torch

    from app.cli import main as mvp
    from mvp_core.model.policy import load_policy
    from mvp_core.model.rollout import GenConfig, RolloutStats, frame_loader, run_rollouts
    from mvp_core.model.tiny import build_tiny_model

    vids = {p.stem: p for p in sample_videos.fetch()}
    with tempfile.TemporaryDirectory() as tmp:
        data, model_dir = Path(tmp) / "data", Path(tmp) / "tiny"
        mvp(["synth", str(vids["bikes"]), str(vids["trailer_bbb"]), "--data", str(data),
             "--per-video", str(args.per_video), "--quiet"])
        records = [json.loads(x) for x in (data / "puzzles.jsonl").read_text().splitlines()]
        build_tiny_model(model_dir)
        model, proc = load_policy(model_dir, device=args.device)
        load = frame_loader(data)
        threads = [int(x) for x in args.threads.split(",")]
        settings = [(f"G=8, 1 puzzle/call, {t} thr", 8, 1, t) for t in threads] + [
            ("G=8, 4 puzzles/call, 1 thr", 8, 4, 1), ("G=1 greedy, 4 puzzles/call, 1 thr", 1, 4, 1)]
        # warm-up (first-call allocations, lazy imports)
        run_rollouts(model, proc, records[:1], load, gcfg=GenConfig(num_generations=2, max_new_tokens=4))
        results = {name: [] for name, _, _, _ in settings}
        for _ in range(args.repeats):
            for name, g, b, t in settings:   # interleaved, so load changes hit every setting alike
                torch.set_num_threads(t)
                st = RolloutStats()
                gc = GenConfig(num_generations=g, max_new_tokens=args.max_new_tokens, do_sample=g > 1)
                run_rollouts(model, proc, records, load, gcfg=gc, batch_puzzles=b, stats=st)
                results[name].append(st.as_dict())
        print(f"{len(records)} puzzles (N=8, m=3, l=4; {records[0]['video']['width']}x"
              f"{records[0]['video']['height']} sources), max_new_tokens={args.max_new_tokens}, "
              f"device={args.device}, median of {args.repeats}")
        print("| setting | answers/s | tokens/s | prep share | generation share | scoring share | scoring ms/answer |")
        print("|---|---:|---:|---:|---:|---:|---:|")
        for name, runs in results.items():
            med = {k: statistics.median(r[k] for r in runs) for k in runs[0]}
            tok_s = statistics.median(r["completion_tokens"] / r["total_s"] for r in runs)
            ms = statistics.median(1000 * r["score_s"] / r["answers"] for r in runs)
            print(f"| {name} | {med['answers_per_s']:.1f} | {tok_s:.0f} | {med['prep_s'] / med['total_s']:.1%} | "
                  f"{med['gen_share']:.1%} | {med['score_share']:.2%} | {ms:.3f} |")
    return 0


if __name__ == "__main__":
    t0 = time.perf_counter()
    rc = main()
    print(f"(bench wall time {time.perf_counter() - t0:.0f} s)")
    sys.exit(rc)

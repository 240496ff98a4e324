"""Rollout throughput on the tiny Qwen2.5-VL: answers/s and where the time goes (building inputs
from the frame store, generation, decoding + scoring), for a few G / batch settings side by side.
With --compare-generate each setting also runs the way rollouts sampled before (transformers'
generate with num_return_sequences=G: every answer's row prefilled with the whole prompt), interleaved,
and the table gives the time ratio of the two.

Usage: .venv/bin/python bench/rollout.py [--repeats 3] [--max-new-tokens 64] [--device cpu] [--compare-generate]
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
    ap.add_argument("--compare-generate", action="store_true",
                    help="also each setting through generate(num_return_sequences=G), as before")
    args = ap.parse_args()

    import sample_videos
    import torch

    from app.cli import main as mvp
    from mvp_core.model import decode
    from mvp_core.model.sampler import sample
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
        prefilled_once = decode.sample_each

        def through_generate(model, inputs, s, n):
            return sample(model, inputs, s, num_return_sequences=n)[:, inputs["input_ids"].shape[1]:]
        ways = [("", prefilled_once)] + ([(" [generate]", through_generate)] if args.compare_generate else [])
        settings = [(name + tag, g, b, t, way) for name, g, b, t in settings for tag, way in ways]
        results = {name: [] for name, *_ in settings}
        for _ in range(args.repeats):
            for name, g, b, t, way in settings:   # interleaved, so load changes hit every setting alike
                torch.set_num_threads(t)
                decode.sample_each = way          # rollout.generate looks it up at each call
                st = RolloutStats()
                gc = GenConfig(num_generations=g, max_new_tokens=args.max_new_tokens, do_sample=g > 1)
                run_rollouts(model, proc, records, load, gcfg=gc, batch_puzzles=b, stats=st)
                results[name].append(st.as_dict())
        decode.sample_each = prefilled_once
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
        if args.compare_generate:
            print("| setting | generation s, prompt once / generate (median of the runs' ratios) |")
            print("|---|---:|")
            for name, *_ in settings:
                if name.endswith("[generate]"):
                    continue
                ratios = [a["gen_s"] / b["gen_s"] for a, b in zip(results[name], results[name + " [generate]"])]
                print(f"| {name} | {statistics.median(ratios):.2f}x |")
    return 0


if __name__ == "__main__":
    t0 = time.perf_counter()
    rc = main()
    print(f"(bench wall time {time.perf_counter() - t0:.0f} s)")
    sys.exit(rc)

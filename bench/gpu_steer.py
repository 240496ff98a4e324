"""Steered vs unsteered generation per token on a GPU, at the published settings (k = 3 layers,
K = 5 steps, energy MLP 2048-1024-1024-512), for a 1B-class shape (Llama, hidden 2048, 16 layers,
bf16; random weights: speed does not depend on them). Not run yet: no device was lent when it was
written (docs/BENCHMARKS.md). Prints the same table as bench/steer_speed.py.

Usage: python bench/gpu_steer.py [--hidden 2048] [--layers 16] [--tokens 64] [--repeats 5] [--batch 1]"""
from __future__ import annotations

import argparse
import statistics
import time

from steer_common import decoder, untrained_bank


def _time(model, batch, tokens, make):
    import contextlib

    import torch
    ctx = make() if make else contextlib.nullcontext()
    with ctx:
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        with torch.inference_mode():
            model.generate(**batch, max_new_tokens=tokens, min_new_tokens=tokens, do_sample=False)
        torch.cuda.synchronize()
    return (time.perf_counter() - t0) / tokens


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--hidden", type=int, default=2048)
    ap.add_argument("--layers", type=int, default=16)
    ap.add_argument("--tokens", type=int, default=64)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--batch", type=int, default=1)
    args = ap.parse_args()
    import torch

    from mvp_core.steer.collect import text_batches
    from mvp_core.steer.config import SteerConfig
    from mvp_core.steer.steer import Steering
    if not torch.cuda.is_available():
        raise SystemExit("no CUDA device: this bench is for a GPU (bench/steer_speed.py is the CPU one)")
    model, tok = decoder(args.hidden, args.layers)
    model.to("cuda", dtype=torch.bfloat16)
    batch = next(text_batches(tok, ["How do I kill a python process?"] * args.batch)).to("cuda")
    big, shut = untrained_bank(model), untrained_bank(model, threshold=1e9)
    settings = {"unsteered": None,
                "k=3 K=5 (published)": lambda: Steering(model, big, SteerConfig(top_k=3, steps=5)),
                "k=3 K=12": lambda: Steering(model, big, SteerConfig(top_k=3, steps=12)),
                "k=20 K=5": lambda: Steering(model, big, SteerConfig(top_k=min(20, args.layers), steps=5)),
                "k=3 K=5, entry gate shut": lambda: Steering(model, shut, SteerConfig(top_k=3, steps=5, gate="entry"))}
    _time(model, batch, 8, None)
    times = {k: [] for k in settings}
    for _ in range(args.repeats):
        for name, make in settings.items():
            times[name].append(_time(model, batch, args.tokens, make))
    base = statistics.median(times["unsteered"])
    print(f"{torch.cuda.get_device_name()}: llama hidden {args.hidden} x {args.layers} layers bf16, batch "
          f"{args.batch}, {args.tokens} new tokens, medians of {args.repeats}")
    print("| setting | ms/token | x unsteered |\n|---|---:|---:|")
    for name, ts in times.items():
        print(f"| {name} | {1000 * statistics.median(ts):.2f} | {statistics.median(ts) / base:.2f} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

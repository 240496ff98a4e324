"""Steered vs unsteered generation, time per new token, side by side (docs/BENCHMARKS.md).

Usage: .venv/bin/python bench/steer_speed.py [--hidden 64] [--layers 4] [--tokens 32] [--repeats 5]
The small model is the toy LM's shape (Llama, hidden 64, 4 layers; `--hidden 896 --layers 24` is
Qwen2.5-0.5B's decoder shape, with the project's small vocabulary); steering at the published
settings: k = 3 layers, K = 5 steps, energy MLP 2048-1024-1024-512. Also: a smaller energy MLP,
the entry gate shut (every state below threshold: one energy forward per call, no gradient) and
K = 1, and the behavioural test's settings (K = 8, steering every position vs the prompt token only).
Settings are interleaved per repeat; medians."""
from __future__ import annotations

import argparse
import functools
import statistics
import time

from steer_common import decoder, untrained_bank


def _time(model, batch, tokens: int, steering) -> float:
    import contextlib

    import torch
    with steering if steering is not None else contextlib.nullcontext():
        t0 = time.perf_counter()
        with torch.inference_mode():
            out = model.generate(**batch, max_new_tokens=tokens, min_new_tokens=tokens, do_sample=False)
        dt = time.perf_counter() - t0
    assert out.shape[1] - batch["input_ids"].shape[1] == tokens
    return dt / tokens


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--hidden", type=int, default=64)
    ap.add_argument("--layers", type=int, default=4)
    ap.add_argument("--intermediate", type=int, help="MLP width of the decoder (default 2.75 x hidden; "
                                                     "Qwen2.5-1.5B: 8960, 3B: 11008)")
    ap.add_argument("--tokens", type=int, default=32)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--only", action="append", default=[], metavar="TEXT",
                    help="run only the settings whose name contains TEXT (repeatable; unsteered always runs): "
                         "big decoder shapes take minutes per setting")
    args = ap.parse_args()
    import torch

    from mvp_core.steer.collect import text_batches
    from mvp_core.steer.config import SteerConfig
    from mvp_core.steer.steer import Steering
    torch.set_num_threads(args.threads)
    model, tok = decoder(args.hidden, args.layers, intermediate=args.intermediate)
    model.to(args.device)
    batch = next(text_batches(tok, ["How do I kill a python process?"])).to(args.device)
    # built on first use: at big decoder shapes each bank holds one energy MLP per layer (GBs)
    big = functools.cache(lambda: untrained_bank(model))
    small = functools.cache(lambda: untrained_bank(model, [256, 128]))
    shut = functools.cache(lambda: untrained_bank(model, threshold=1e9))
    settings = {
        "unsteered": None,
        "k=3 K=5, MLP 2048-1024-1024-512 (published)": lambda: Steering(model, big(), SteerConfig(top_k=3, steps=5)),
        "k=3 K=5, MLP 2048-1024-1024-512, prompt token only":
            lambda: Steering(model, big(), SteerConfig(top_k=3, steps=5, positions="prompt")),
        "k=3 K=1, MLP 2048-1024-1024-512": lambda: Steering(model, big(), SteerConfig(top_k=3, steps=1)),
        "k=3 K=5, MLP 256-128": lambda: Steering(model, small(), SteerConfig(top_k=3, steps=5)),
        "k=3 K=5, entry gate shut (state below threshold)":
            lambda: Steering(model, shut(), SteerConfig(top_k=3, steps=5, gate="entry")),
        # the behavioural test's settings (docs/steer.md): every position vs the last prompt token only
        "k=3 K=8 eta=0.95, MLP 256-128, every position":
            lambda: Steering(model, small(), SteerConfig(top_k=3, steps=8, eta=0.95)),
        "k=3 K=8 eta=0.95, MLP 256-128, prompt token only":
            lambda: Steering(model, small(), SteerConfig(top_k=3, steps=8, eta=0.95, positions="prompt")),
    }
    if args.only:
        settings = {k: v for k, v in settings.items() if v is None or any(t in k for t in args.only)}
    times = {k: [] for k in settings}
    _time(model, batch, 4, None)   # warm-up
    for _ in range(args.repeats):
        for name, make in settings.items():
            times[name].append(_time(model, batch, args.tokens, make() if make else None))
    base = statistics.median(times["unsteered"])
    print(f"model: llama hidden {args.hidden} x {args.layers} layers (MLP {model.config.intermediate_size}), "
          f"{sum(p.numel() for p in model.parameters()) / 1e9:.2f} B parameters, {args.tokens} new tokens, batch 1, "
          f"{args.threads} threads, {args.device}, medians of {args.repeats}")
    print("| setting | ms/token | x unsteered |\n|---|---:|---:|")
    for name, ts in times.items():
        m = statistics.median(ts)
        print(f"| {name} | {1000 * m:.2f} | {m / base:.2f} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

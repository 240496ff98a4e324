"""State collection: every layer in one forward pass (hooks on all layers, stop after the last
layer's input) vs the published way (one full forward pass per layer), time per prompt side by side.

Usage: .venv/bin/python bench/steer_collect.py [--prompts 64] [--batch-size 16] [--repeats 3]
Shapes: the toy LM (hidden 64, 4 layers) and a deeper one (hidden 256, 16 layers); random weights."""
from __future__ import annotations

import argparse
import statistics
import time

from steer_common import decoder


def per_layer_pass(model, batches):
    """The published approach: for each layer, a full forward with one hook on that layer."""
    import torch

    from mvp_core.steer.layers import decoder_layers, hidden_from_call
    mods = decoder_layers(model)
    out = []
    for inputs in batches:
        cols = []
        for m in mods:
            got: dict = {}

            def grab(_m, a, k, got=got):
                got["x"] = hidden_from_call(a, k)[:, -1].float()
            h = m.register_forward_pre_hook(grab, with_kwargs=True)
            try:
                with torch.inference_mode():
                    model(**inputs, use_cache=False)
            finally:
                h.remove()
            cols.append(got["x"])
        out.append(torch.stack(cols, 1))
    return torch.cat(out)


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--prompts", type=int, default=64)
    ap.add_argument("--batch-size", type=int, default=16)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--shapes", default="64x4,256x16", help="hidden x layers, comma-separated")
    args = ap.parse_args()
    import torch

    from mvp_core.steer.collect import collect_states, text_batches
    from mvp_core.steer.config import CollectConfig
    torch.set_num_threads(args.threads)
    prompts = [f"How do I {v} the {o} number {i}?" for i, (v, o) in
               enumerate(zip(["clean", "kill", "fix", "shoot"] * 64, ["process", "photo", "garden", "file"] * 64))]
    prompts = prompts[: args.prompts]
    print("| model | one pass, all layers (ms/prompt) | one pass per layer (ms/prompt) | speed-up |\n|---|---:|---:|---:|")
    for hidden, layers in (tuple(int(v) for v in sh.split("x")) for sh in args.shapes.split(",")):
        model, tok = decoder(hidden, layers)
        cfg = CollectConfig(batch_size=args.batch_size)
        batches = list(text_batches(tok, prompts, cfg))
        a, b = [], []
        ref = collect_states(model, batches)
        torch.testing.assert_close(ref, per_layer_pass(model, batches[:1] + batches[1:]))   # same states
        for _ in range(args.repeats):
            t0 = time.perf_counter()
            collect_states(model, batches)
            a.append((time.perf_counter() - t0) / len(prompts))
            t0 = time.perf_counter()
            per_layer_pass(model, batches)
            b.append((time.perf_counter() - t0) / len(prompts))
        ma, mb = statistics.median(a), statistics.median(b)
        print(f"| hidden {hidden} x {layers} layers | {1000 * ma:.2f} | {1000 * mb:.2f} | {mb / ma:.1f}x |", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""One prompt forward per group against one per completion (mvp_core/train/shared_prompt.py),
side by side in one process on the same GRPO batch: the generate step (prefill shared or not) and
the log-prob forward + backward (prompt shared or not). Alternates the two ways `--repeats` times
and prints the medians and their ratio (docs/BENCHMARKS.md, "One prompt forward per group").

    python bench/grpo_shared_prompt.py --model assets/clock-sft --puzzles DATA/puzzles.jsonl
"""
from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import torch  # noqa: E402

from mvp_core.train import distributed as D  # noqa: E402
from mvp_core.train.config import load_config  # noqa: E402
from mvp_core.train.data import PuzzleSet  # noqa: E402
from mvp_core.train.loop import StepContext, completion_logps, generate  # noqa: E402
from mvp_core.train.model_setup import load_model  # noqa: E402


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--model", default="assets/clock-sft")
    p.add_argument("--puzzles", required=True, help="a puzzles.jsonl (mvp synth)")
    p.add_argument("--puzzles-per-step", type=int, default=32)
    p.add_argument("--generations", type=int, default=8)
    p.add_argument("--micro-batch", type=int, default=32, help="sequences per log-prob forward")
    p.add_argument("--max-pixels", type=int, default=3136)
    p.add_argument("--max-completion-length", type=int, default=64)
    p.add_argument("--repeats", type=int, default=5)
    p.add_argument("--threads", type=int, default=1)
    args = p.parse_args()
    torch.set_num_threads(args.threads)
    torch.manual_seed(0)

    ctxs = {}
    for share in (False, True):
        cfg = load_config(None, [f"model={args.model}", f"puzzles={args.puzzles}", "output_dir=/tmp/unused",
                                 f"num_generations={args.generations}", f"max_pixels={args.max_pixels}",
                                 f"max_completion_length={args.max_completion_length}",
                                 f"share_prompt={str(share).lower()}"])
        ctxs[share] = cfg
    info = D.init_distributed()
    model, processor = load_model(ctxs[True], info.device)
    tok = processor.tokenizer
    eos, pad = frozenset({tok.eos_token_id}), tok.pad_token_id
    data = PuzzleSet.open(ctxs[True])
    puzzles = [data.records[i % len(data.records)] for i in range(args.puzzles_per_step)]
    encs = [data.encode(r, processor) for r in puzzles]
    seqs = [e for e in encs for _ in range(args.generations)]
    print(f"{len(puzzles)} puzzles x G={args.generations}, prompt tokens "
          f"{statistics.median(int(e['input_ids'].shape[-1]) for e in encs):.0f} (median), {args.threads} thread(s)")

    times = {(k, s): [] for k in ("generate", "logprob+backward") for s in (False, True)}
    comps = None
    for r in range(args.repeats):
        for share in ((False, True) if r % 2 == 0 else (True, False)):
            ctx = StepContext(ctxs[share], info, model, model, None, processor, eos, pad, False)
            torch.manual_seed(r)
            t = time.perf_counter()
            out = generate(ctx, seqs)
            times[("generate", share)].append(time.perf_counter() - t)
            comps = comps or out          # the same completions for both ways' log-probs
            model.zero_grad(set_to_none=True)
            model.train()
            t = time.perf_counter()
            for s in range(0, len(seqs), args.micro_batch):
                logps, _, mask = completion_logps(ctx, model, seqs[s:s + args.micro_batch], comps[s:s + args.micro_batch])
                ((logps * mask).sum() / mask.sum()).backward()
            times[("logprob+backward", share)].append(time.perf_counter() - t)
    print(f"completion tokens per sequence {statistics.mean(int(c.numel()) for c in comps):.1f} (mean)")
    print(f"{'phase':<18} {'whole s':>8} {'shared s':>9} {'speed-up':>9}")
    total = {False: 0.0, True: 0.0}
    for phase in ("generate", "logprob+backward"):
        a, b = statistics.median(times[(phase, False)]), statistics.median(times[(phase, True)])
        total[False] += a
        total[True] += b
        print(f"{phase:<18} {a:>8.2f} {b:>9.2f} {a / b:>8.2f}x")
    print(f"{'both':<18} {total[False]:>8.2f} {total[True]:>9.2f} {total[False] / total[True]:>8.2f}x")


if __name__ == "__main__":
    main()

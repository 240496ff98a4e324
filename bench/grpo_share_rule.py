"""The measurement behind shared_prompt.SHARE_MIN_SAVED_TOKENS (docs/grpo.md, "When sharing pays"):
the log-prob forward + backward of one micro-batch with the prompt shared and whole, for groups of
G = 1 (nothing repeated: the shared path's pure overhead) to 4, alternated `--repeats` times in one
process, CPU seconds (the process's own time: steadier than wall time on a shared machine).
A line through (prompt tokens saved, shared - whole) gives the shared path's fixed extra cost, the
cost of a saved prompt token, and their ratio: the prompt tokens a micro-batch must save to gain.

    python bench/grpo_share_rule.py --puzzles DATA/puzzles.jsonl [--model assets/clock-sft]
"""
from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import torch  # noqa: E402

from mvp_core.train import batching, shared_prompt  # noqa: E402
from mvp_core.train.config import load_config  # noqa: E402
from mvp_core.train.data import PuzzleSet  # noqa: E402
from mvp_core.train.model_setup import end_ids, load_model  # noqa: E402


def forward_backward(model, seqs, comps, pad, eos, shared: bool) -> float:
    """CPU seconds of one log-prob forward and backward of the micro-batch."""
    model.zero_grad(set_to_none=True)
    t = time.process_time()
    if shared:
        logits, b = shared_prompt.completion_logits(model, seqs, comps, pad, torch.device("cpu"), eos)
    else:
        b = batching.collate(seqs, comps, pad, torch.device("cpu"), eos)
        n = b["completion_mask"].shape[1]
        inputs = {k: v for k, v in b.items() if k not in ("completion_mask", "prompt_len")}
        logits = model(**inputs, logits_to_keep=n + 1, use_cache=False).logits[:, :-1]
    mean_logp_backward(logits, b)
    return time.process_time() - t


def mean_logp_backward(logits, batch) -> None:
    """The backward of the completion tokens' mean log-prob (a loss of the step's shape)."""
    mask = batch["completion_mask"]
    ids = batch["input_ids"][:, -mask.shape[1]:]
    lp = torch.log_softmax(logits.float(), -1).gather(-1, ids.unsqueeze(-1)).squeeze(-1)
    ((lp * mask).sum() / mask.sum()).backward()


def bench_policy(model_path: str, puzzles: str, prompts: int):
    """(the policy in training mode on one CPU thread, its end ids, the first `prompts` puzzles' encodings)."""
    torch.set_num_threads(1)
    cfg = load_config(None, [f"model={model_path}", f"puzzles={puzzles}", "output_dir=/tmp/unused",
                             "freeze_vision=true"])
    model, processor = load_model(cfg, torch.device("cpu"))
    model.train()
    data = PuzzleSet.open(cfg)
    return model, end_ids(model, processor), [data.encode(r, processor) for r in data.records[:prompts]]


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--model", default="assets/clock-sft")
    p.add_argument("--puzzles", required=True, help="a puzzles.jsonl (mvp synth)")
    p.add_argument("--prompts", type=int, default=2, help="distinct prompts in the micro-batch")
    p.add_argument("--completion-tokens", type=int, default=32)
    p.add_argument("--repeats", type=int, default=9)
    args = p.parse_args()
    model, ends, encs = bench_policy(args.model, args.puzzles, args.prompts)
    g = torch.Generator().manual_seed(0)
    vocab = model.config.text_config.vocab_size
    points = []
    print(f"{args.prompts} prompts of {max(int(e['input_ids'].shape[-1]) for e in encs)} tokens, "
          f"{args.completion_tokens} completion tokens each, CPU ms (median of {args.repeats})")
    print(f"{'G':>3} {'saved':>6} {'whole':>8} {'shared':>8} {'shared-whole':>13}")
    for G in (1, 2, 3, 4):
        seqs = [e for e in encs for _ in range(G)]
        comps = [torch.randint(10, vocab, (args.completion_tokens,), generator=g) for _ in seqs]
        times = {False: [], True: []}
        for r in range(args.repeats + 1):
            for shared in ((False, True) if r % 2 == 0 else (True, False)):
                dt = forward_backward(model, seqs, comps, ends.pad, ends.stop, shared)
                if r:                                   # the first round warms up
                    times[shared].append(dt)
        whole, shared = (statistics.median(times[k]) * 1000 for k in (False, True))
        saved = shared_prompt.saved_prompt_tokens(seqs)
        points.append((saved, shared - whole))
        print(f"{G:>3} {saved:>6} {whole:>8.1f} {shared:>8.1f} {shared - whole:>13.1f}")
    # the fixed extra: measured where nothing is saved (G=1); a saved token's cost: the fit's slope
    fixed, slope = points[0][1], statistics.linear_regression(*zip(*points)).slope
    print(f"shared path's fixed extra {fixed:.1f} ms; a saved prompt token {-slope * 1000:.0f} us; "
          f"break-even {fixed / -slope:.0f} saved prompt tokens "
          f"(shared_prompt.SHARE_MIN_SAVED_TOKENS = {shared_prompt.SHARE_MIN_SAVED_TOKENS})")

if __name__ == "__main__":
    main()

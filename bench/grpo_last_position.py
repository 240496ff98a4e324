"""The prompt forward's last layer run for its last position alone (mvp_core/model/last_position.py;
docs/grpo.md, "The prompt forward's last layer") beside the layer run whole: the part of a GRPO step it
touches (the step's prompt pass, the shared log-prob forward on top of it, their backward), on the bench's
policy and batch (bench/peer_trl.py: 2 puzzles x G completions of 32 tokens, the vision tower frozen),
alternated in one process, CPU seconds (the process's own time: steadier than wall time on a shared machine).

    python bench/grpo_last_position.py --puzzles DATA/puzzles.jsonl [--group 2] [--pairs 60]
"""
from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import torch  # noqa: E402

from mvp_core.model import last_position, vl_parts  # noqa: E402
from mvp_core.train import shared_prompt  # noqa: E402
from grpo_share_rule import bench_policy, mean_logp_backward  # noqa: E402


def prompt_and_logprobs(model, seqs, comps, pad, eos) -> float:
    """CPU seconds of the step's prompt pass, the log-prob forward taking it, and their backward."""
    model.zero_grad(set_to_none=True)
    t = time.process_time()
    cpu = torch.device("cpu")
    head = shared_prompt.prompt_pass(model, seqs, pad, cpu)
    logits, b = shared_prompt.completion_logits(model, seqs, comps, pad, cpu, eos, prompt_pass=head)
    mean_logp_backward(logits, b)
    return time.process_time() - t


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--model", default="assets/clock-sft")
    p.add_argument("--puzzles", required=True, help="a puzzles.jsonl (mvp synth; bench/peer_trl.py makes the bench's)")
    p.add_argument("--prompts", type=int, default=2, help="distinct prompts in the step")
    p.add_argument("--group", type=int, default=2, help="completions per prompt (G)")
    p.add_argument("--completion-tokens", type=int, default=32)
    p.add_argument("--pairs", type=int, default=60, help="alternated pairs (the first is a warm-up)")
    args = p.parse_args()
    model, ends, encs = bench_policy(args.model, args.puzzles, args.prompts)
    seqs = [e for e in encs for _ in range(args.group)]
    g = torch.Generator().manual_seed(0)
    comps = [torch.randint(10, model.config.text_config.vocab_size, (args.completion_tokens,), generator=g)
             for _ in seqs]
    lm = vl_parts.language_model(model)
    prompt_and_logprobs(model, seqs, comps, ends.pad, ends.stop)            # the first use's check
    if last_position.CHECKED.get(lm) is not True:
        raise SystemExit("the last-position path does not apply to this model (its first-use check)")
    times = {True: [], False: []}
    for r in range(args.pairs):
        for on in ((True, False) if r % 2 == 0 else (False, True)):
            last_position.CHECKED[lm] = on                 # False: the layer runs whole (the path's own switch)
            dt = prompt_and_logprobs(model, seqs, comps, ends.pad, ends.stop)
            if r:
                times[on].append(dt)
    on, off = (statistics.median(times[k]) * 1000 for k in (True, False))
    ratio = statistics.median(a / b for a, b in zip(times[True], times[False]))
    print(f"{args.prompts} prompts of {max(int(e['input_ids'].shape[-1]) for e in encs)} tokens x G={args.group}, "
          f"{args.completion_tokens} completion tokens; CPU ms, medians of {args.pairs - 1} alternated pairs")
    print(f"last layer whole {off:.1f} ms; last position only {on:.1f} ms; {on / off:.3f}x "
          f"(median of the pairs' ratios {ratio:.3f}x)")


if __name__ == "__main__":
    main()

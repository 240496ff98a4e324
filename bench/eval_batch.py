"""Greedy evaluation's CPU time by puzzles per generate call (`mvp eval --batch-puzzles`), side by side in
one process, rounds alternating the sizes, on a data directory's puzzles (frames read from it): the CPU
seconds of each size, its ratio to 8 (`mvp eval`'s default), and whether every size gave the same answers.

    python bench/eval_batch.py --data DATA [--model assets/clock-sft] [--limit 96] [--sizes 8,16,32] [--rounds 3]

DATA: a data directory holding puzzles.jsonl and its frames (`mvp synth`'s output; bench/learning_proof.py's
WORK/test is one). One thread (the 2-core machine's evaluations run one per core)."""
from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", type=Path, required=True)
    ap.add_argument("--model", default=str(ROOT / "assets" / "clock-sft"))
    ap.add_argument("--limit", type=int, default=96)
    ap.add_argument("--sizes", default="8,16,32")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--max-new-tokens", type=int, default=64)
    args = ap.parse_args()
    import torch

    from mvp_core.model.evaluate import evaluate
    from mvp_core.model.policy import load_policy
    from mvp_core.model.prompt import PromptConfig
    from mvp_core.model.rollout import GenConfig, frame_loader
    torch.set_num_threads(1)
    lines = (args.data / "puzzles.jsonl").read_text().splitlines()
    records = [json.loads(x) for x in lines if x.strip()][: args.limit]
    model, processor = load_policy(args.model)
    gcfg = GenConfig(do_sample=False, max_new_tokens=args.max_new_tokens)
    sizes = [int(x) for x in args.sizes.split(",")]
    cpu: dict[int, list[float]] = {b: [] for b in sizes}
    answers: dict[int, list] = {}
    for _ in range(args.rounds):
        for b in sizes:
            t = time.process_time()
            rep = evaluate(model, processor, records, frame_loader(args.data), PromptConfig(), gcfg,
                           baselines=False, batch_puzzles=b)
            cpu[b].append(time.process_time() - t)
            answers[b] = [p["model_labels"] for p in rep["puzzles"]]
    base = statistics.median(cpu[sizes[0]])
    print(f"{len(records)} puzzles, {args.rounds} rounds, CPU seconds (median)")
    for b in sizes:
        med = statistics.median(cpu[b])
        same = answers[b] == answers[sizes[0]]
        print(f"  {b:3d} per call: {med:6.2f} s  {med / base:.2f}x of {sizes[0]}  "
              f"answers the same as {sizes[0]}: {same}")


if __name__ == "__main__":
    main()

"""Held-out evaluation during training (SFT and GRPO): every `eval_steps` optimizer steps the
trainer answers each held-out puzzle once, greedily, with the same prompt settings it trains
with, and logs `eval_reward`, `eval_exact`, `eval_format` (means over the puzzles) into that
step's metrics.jsonl row. The held-out puzzles come from videos the run does not train on
(a curated set's val/test split, or a separate puzzles file)."""
from __future__ import annotations

from pathlib import Path

from mvp_core.errors import UserError
from mvp_core.puzzle import read_puzzles_jsonl

EVAL_FIELDS = ("eval_reward", "eval_exact", "eval_format", "eval_n", "eval_s")


class HeldOut:
    """The held-out puzzles of a run and how to score the current policy on them."""

    def __init__(self, records: list[dict], data_dir: Path, cfg):
        from mvp_core.model.prompt import PromptConfig
        from mvp_core.video.frames import FrameStore
        self.records, self.data_dir = records, data_dir
        self.prompt = PromptConfig(video_mode=cfg.video_mode, max_pixels=cfg.max_pixels or None)
        self.max_new_tokens = int(cfg.max_completion_length)
        self.load = FrameStore(data_dir).load

    @classmethod
    def from_config(cls, cfg) -> "HeldOut | None":
        """None when the run has no eval puzzles (eval_puzzles empty)."""
        if not cfg.eval_puzzles:
            return None
        path = Path(cfg.eval_puzzles)
        records = read_puzzles_jsonl(path, "eval puzzles file", cfg.eval_split)
        if cfg.eval_limit:
            records = records[: cfg.eval_limit]
        data_dir = Path(cfg.eval_data_dir) if cfg.eval_data_dir else path.parent
        if not data_dir.is_dir():
            raise UserError(f"eval_data_dir {data_dir} is not a directory")
        return cls(records, data_dir, cfg)

    def evaluate(self, model, processor, batch_puzzles: int = 8) -> dict:
        """{'eval_reward', 'eval_exact', 'eval_format', 'eval_n', 'eval_s'} for greedy answers."""
        import time

        import numpy as np
        import torch

        from mvp_core.model.rollout import GenConfig, run_rollouts
        t0 = time.perf_counter()
        was_training = model.training
        model.eval()
        # run_rollouts seeds torch's global RNG per puzzle: forked here, so the training steps after an
        # evaluation sample what they would have sampled without it
        devices = [model.device] if model.device.type == "cuda" else []
        try:
            with torch.random.fork_rng(devices=devices):
                rows = run_rollouts(model, processor, self.records, self.load, self.prompt,
                                    GenConfig(num_generations=1, do_sample=False, max_new_tokens=self.max_new_tokens),
                                    batch_puzzles=batch_puzzles)
        finally:
            model.train(was_training)
        return {"eval_reward": float(np.mean([r["total"] for r in rows])),
                "eval_exact": float(np.mean([r["exact"] for r in rows])),
                "eval_format": float(np.mean([r["format"] for r in rows])),
                "eval_n": len(rows), "eval_s": time.perf_counter() - t0}

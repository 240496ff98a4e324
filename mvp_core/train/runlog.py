"""Per-step metrics (TRL's names and meanings) and the log lines of a run.

Metrics are reduced over all processes (sums all-reduced, then divided), so metrics.jsonl reads
the same under torchrun as in one process. Timings are rank 0's."""
from __future__ import annotations

import math
import time

import torch

from mvp_core.train import distributed as D
from mvp_core.train.rewards import TERMS
from mvp_core.train.rundir import RunDir


class RunLogger:
    """Rank 0's log lines, metrics.jsonl, status and the trackers of `report_to` (tracking.py)."""

    def __init__(self, run: RunDir, info: D.DistInfo):
        self.run, self.dist = run, info
        self.tracker = None          # tracking.Trackers, opened on rank 0 once the run is marked running

    def info(self, msg: str) -> None:
        if self.dist.is_main:
            print(msg, flush=True)
            self.run.log(msg)

    def completions(self, step: int, rows: list[dict], save: bool) -> None:
        """Gather every process's completion rows; rank 0 writes completions/step_N.parquet."""
        allrows = D.gather_objects(rows, self.dist) if save else []
        if self.dist.is_main and save:
            flat = [dict(r, step=step) for part in allrows for r in part]
            self.run.write_completions(step, flat)

    def metrics(self, step: int, m: dict, line: str) -> None:
        if not self.dist.is_main:
            return
        self.run.append_metrics(m)
        self.run.write_status(state="running", step=step)
        if self.tracker is not None:
            self.tracker.log(step, m)
        print(line, flush=True)
        self.run.log(line)

    def close(self) -> None:
        if self.tracker is not None:
            self.tracker.close()
            self.tracker = None


def logged_norm(grad_norm: float) -> float | None:
    """The gradient norm clip_grad_norm_ measured, as logged (GRPO and SFT): JSON has no NaN/inf, so a
    non-finite norm is null, never a made-up number."""
    return float(grad_norm) if math.isfinite(grad_norm) else None


def step_metrics(out: dict, step: int, info: D.DistInfo, *, grad_norm: float, lr: float, step_s: float,
                 epoch: float) -> dict:
    r = out["rewards"]
    adv = out["adv"]
    n_global = float(r.numel())
    st = out["stats"]
    sums = [sum(s[t] for s in out["local_scores"]) for t in TERMS]
    local = torch.tensor(sums + [st["tokens"], st["kl"], st["clip_low"], st["clip_high"], st["entropy"],
                                 st["loss"]], dtype=torch.float64)
    tot = [D.all_sum(float(x), info) for x in local] if info.enabled else local.tolist()
    terms = dict(zip(TERMS, tot[:4]))
    tokens, kl, clip_low, clip_high, entropy, loss = tot[4:]
    ntok = max(tokens, 1.0)
    timer = out["timer"]
    model_s = sum(timer[k] for k in ("generate", "logprob", "backward", "optimizer"))
    m = {
        "step": step,
        "reward": float(r.mean()),
        # TRL's reward_std: the mean of the per-sample group std (0 for groups without signal).
        "reward_std": float(torch.nan_to_num(adv.std).mean()),
        **{f"reward/{t}": terms[t] / n_global for t in TERMS},
        "frac_reward_zero_std": float(adv.zero_std.float().mean()),
        "completion_length": tokens / n_global,
        "clip_ratio/low": clip_low / ntok,
        "clip_ratio/high": clip_high / ntok,
        "clip_ratio/region": (clip_low + clip_high) / ntok,
        "kl": kl / ntok,
        "entropy": entropy / ntok,
        "loss": loss / info.world,
        "grad_norm": logged_norm(grad_norm),
        "lr": lr,
        "step_s": step_s,
        "samples_per_s": n_global / step_s,
        "tokens_per_s": tokens / step_s,
        **{f"time/{k}_s": timer[k] for k in ("generate", "score", "logprob", "backward", "optimizer")},
        "time/other_s": max(0.0, step_s - model_s - timer["score"]),
        "epoch": epoch,
        "time": time.time(),
    }
    return m

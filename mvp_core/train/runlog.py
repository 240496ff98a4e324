"""Per-step metrics (TRL's meanings; trackers get TRL's names, tracking.py) and the log lines of a run.

Metrics are reduced over all processes (sums all-reduced, then divided), so metrics.jsonl reads
the same under torchrun as in one process. Timings are rank 0's."""
from __future__ import annotations

import math
import time

import torch

from mvp_core.train import distributed as D
from mvp_core.train.rewards import TERMS
from mvp_core.train.rundir import RunDir, read_metrics


class RunLogger:
    """Rank 0's log lines, metrics.jsonl, status and the trackers of `report_to` (tracking.py)."""

    def __init__(self, run: RunDir, info: D.DistInfo):
        self.run, self.dist = run, info
        self.tracker = None          # tracking.Trackers, opened on rank 0 once the run is marked running
        self.tokens_seen: float | None = None

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
        if "step_tokens" in m:           # TRL's num_tokens: prompt + completion tokens seen since step 1
            if self.tokens_seen is None:     # the first step of this process: carry on from a resumed run's
                before = [row for row in read_metrics(self.run.path) if row.get("step", 0) < step]
                self.tokens_seen = float(before[-1].get("num_tokens", 0.0)) if before else 0.0
            self.tokens_seen += m["step_tokens"]
            m["num_tokens"] = self.tokens_seen
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
    lengths, ended = _gathered_lengths(out, info)
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
        # TRL's reward_std: the unbiased std over every completion of the step (the one above is per group)
        "reward_std_batch": float(r.double().std()) if r.numel() > 1 else 0.0,
        "completion_length/min": min(lengths),
        "completion_length/max": max(lengths),
        # TRL's clipped_ratio and terminated lengths: a completion that did not end on a stop token was cut
        # at max_completion_length; with none ended, TRL logs 0 for the terminated lengths
        "clipped_ratio": 1.0 - sum(ended) / len(ended),
        **_terminated([n for n, e in zip(lengths, ended) if e]),
        "step_tokens": D.all_sum(float(out["prompt_tokens_local"]), info) + tokens,
    }
    return m


def _gathered_lengths(out: dict, info: D.DistInfo) -> tuple[list[float], list[bool]]:
    """Every process's completion lengths (tokens, up to and including the stop token) and whether each
    ended on a stop token, in rank order."""
    mine = ([float(row["completion_tokens"]) for row in out["rows"]], list(out["ended_local"]))
    parts = D.gather_objects(mine, info)
    return [n for p in parts for n in p[0]], [e for p in parts for e in p[1]]


def _terminated(lengths: list[float]) -> dict:
    kept = lengths or [0.0]
    return {"terminated_length/mean": sum(kept) / len(kept), "terminated_length/min": min(kept),
            "terminated_length/max": max(kept)}

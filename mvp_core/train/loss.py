"""Group-relative advantages and the clipped GRPO surrogate, with TRL's formulas (trl 1.16,
`GRPOTrainer._generate_and_score_completions` and `_compute_loss`), so numbers compare with TRL.

Shapes: `rewards` (N,) with N = groups x G in group order; per-token tensors (B, T) with a 0/1
`mask` over completion tokens."""
from __future__ import annotations

from dataclasses import dataclass

import torch


def nanstd(x: torch.Tensor, dim=None, keepdim: bool = False) -> torch.Tensor:
    """Std with Bessel's correction (TRL's `nanstd`); NaN where fewer than two values."""
    mean = torch.nanmean(x, dim=dim, keepdim=True)
    var = torch.nanmean((x - mean) ** 2, dim=dim, keepdim=True)
    count = torch.sum(~torch.isnan(x), dim=dim, keepdim=True)
    var = var * torch.where(count > 1, count / (count - 1), torch.full_like(var, float("nan")))
    std = torch.sqrt(var)
    return std if keepdim else (std.squeeze() if dim is None else std.squeeze(dim))


@dataclass
class Advantages:
    advantages: torch.Tensor      # (N,)
    std: torch.Tensor             # (N,) the std each reward was compared with (logging)
    zero_std: torch.Tensor        # (N,) bool: the group's rewards were all equal (no signal)


def group_advantages(rewards: torch.Tensor, num_generations: int, scale_rewards: str = "group") -> Advantages:
    """A_i = r_i - mean(group), divided by (std + 1e-4) of the group ("group"), of the whole
    batch ("batch"), or not divided ("none"). The group std is still reported for "none" so
    `frac_reward_zero_std` means the same thing in every mode (as in TRL)."""
    r = rewards.float()
    groups = r.view(-1, num_generations)
    mean = groups.mean(dim=1).repeat_interleave(num_generations)
    if scale_rewards in ("group", "none"):
        std = nanstd(groups, dim=1).repeat_interleave(num_generations)
    elif scale_rewards == "batch":
        std = nanstd(r).expand_as(r) if r.numel() > 1 else torch.zeros_like(r)
    else:
        raise ValueError(f"scale_rewards must be group, batch or none, not {scale_rewards!r}")
    adv = r - mean
    if scale_rewards != "none":
        adv = adv / (std + 1e-4)
    zero_std = torch.isclose(std, torch.zeros_like(std))
    return Advantages(torch.nan_to_num(adv, nan=0.0), std, zero_std)


def group_advantage_list(totals: list[float]) -> list[float]:
    """One group's advantages as plain floats (the rollouts and the rollouts page use this, so they
    show exactly what training computes for the same rewards)."""
    if not totals:
        return []
    return group_advantages(torch.tensor(totals, dtype=torch.float64), len(totals)).advantages.tolist()


def selective_log_softmax(logits: torch.Tensor, ids: torch.Tensor) -> torch.Tensor:
    """log p(ids) under softmax(logits), row by row to keep the (B, T, V) float32 copy small."""
    out = []
    for row_logits, row_ids in zip(logits, ids):
        lp = torch.log_softmax(row_logits.float(), dim=-1)
        out.append(lp.gather(-1, row_ids.unsqueeze(-1)).squeeze(-1))
    return torch.stack(out)


def entropy_from_logits(logits: torch.Tensor) -> torch.Tensor:
    """Per-token entropy (B, T), without gradient (a metric)."""
    with torch.no_grad():
        out = []
        for row in logits:
            p = torch.softmax(row.float(), dim=-1)
            out.append(-torch.xlogy(p, p).sum(-1))      # 0 log 0 = 0 at masked (-inf) logits
        return torch.stack(out)


def k3_kl(logps: torch.Tensor, ref_logps: torch.Tensor) -> torch.Tensor:
    """Schulman's k3 estimator of KL(pi || ref) per token: exp(ref - logp) - (ref - logp) - 1 >= 0."""
    d = ref_logps - logps
    return torch.exp(d) - d - 1


@dataclass
class LossOut:
    loss: torch.Tensor            # scalar to call .backward() on (already scaled for accumulation)
    policy_loss: float            # the loss before the accumulation scaling (logging)
    kl: float                     # masked mean k3 KL (0 when beta == 0)
    clip_low: float               # share of tokens clipped at 1 - epsilon with A < 0
    clip_high: float              # share of tokens clipped at 1 + epsilon_high with A > 0
    n_tokens: float


def grpo_loss(logps: torch.Tensor, old_logps: torch.Tensor, advantages: torch.Tensor, mask: torch.Tensor,
              *, loss_type: str = "dapo", epsilon: float = 0.2, epsilon_high: float | None = None,
              beta: float = 0.0, ref_logps: torch.Tensor | None = None, max_completion_length: int | None = None,
              grad_accum: int = 1, dapo_normalizer: float | None = None) -> LossOut:
    """TRL's clipped surrogate for one micro-batch.

    per_token = -min(rho * A, clip(rho, 1 - eps, 1 + eps_high) * A) [+ beta * k3 KL], rho = exp(logp - old)
      grpo:    mean over sequences of (masked token mean)                / grad_accum
      bnpo:    masked token mean over the micro-batch                    / grad_accum
      dr_grpo: masked token sum / (B * max_completion_length)           / grad_accum
      dapo:    masked token sum / dapo_normalizer, where dapo_normalizer is the step's completion
               tokens over all micro-batches and processes divided by the number of processes;
               summed over micro-batches and averaged by DDP this is the mean over every token
               of the step.
    """
    eps_high = epsilon if epsilon_high is None else epsilon_high
    mask = mask.to(logps.dtype)
    adv = advantages.unsqueeze(1) if advantages.dim() == 1 else advantages
    ratio = torch.exp(logps - old_logps)
    clipped = torch.clamp(ratio, 1 - epsilon, 1 + eps_high)
    per_token = -torch.min(ratio * adv, clipped * adv)
    kl_tok = None
    if beta != 0.0:
        if ref_logps is None:
            raise ValueError("beta > 0 needs ref_logps")
        # Only completion tokens enter the KL: outside the mask the reference may be filler (0 where a
        # log-prob sub-batch was narrower than the micro-batch), and exp(0 - a very negative log-prob)
        # overflows to inf, whose 0 * inf = NaN poisoned the loss and the gradient.
        kl_tok = k3_kl(torch.where(mask.bool(), logps, 0.0), torch.where(mask.bool(), ref_logps, 0.0))
        per_token = per_token + beta * kl_tok

    if loss_type == "grpo":
        loss = ((per_token * mask).sum(-1) / mask.sum(-1).clamp(min=1.0)).mean()
        policy_loss, loss = loss.detach(), loss / grad_accum
    elif loss_type == "bnpo":
        loss = (per_token * mask).sum() / mask.sum().clamp(min=1.0)
        policy_loss, loss = loss.detach(), loss / grad_accum
    elif loss_type == "dr_grpo":
        if not max_completion_length:
            raise ValueError("dr_grpo needs max_completion_length")
        loss = (per_token * mask).sum() / (per_token.size(0) * max_completion_length)
        policy_loss, loss = loss.detach(), loss / grad_accum
    elif loss_type == "dapo":
        norm = mask.sum().clamp(min=1.0) if dapo_normalizer is None else max(float(dapo_normalizer), 1.0)
        loss = (per_token * mask).sum() / norm
        policy_loss = loss.detach()
    else:
        raise ValueError(f"unknown loss_type {loss_type!r}")

    with torch.no_grad():
        n = mask.sum().clamp(min=1.0)
        low = ((ratio < 1 - epsilon) & (adv < 0)).to(mask.dtype)
        high = ((ratio > 1 + eps_high) & (adv > 0)).to(mask.dtype)
        kl = float((kl_tok * mask).sum() / n) if kl_tok is not None else 0.0
        return LossOut(loss, float(policy_loss), kl, float((low * mask).sum() / n),
                       float((high * mask).sum() / n), float(mask.sum()))

"""Everything between "a checkpoint path" and "a model the loop can train": loading, freezing the
vision tower, LoRA, gradient checkpointing, the frozen reference, AdamW and its schedule."""
from __future__ import annotations

import math
from pathlib import Path

import torch

from mvp_core.errors import UserError
from mvp_core.grpo.config import GRPOConfig

# LoRA adapts the language model only: the vision tower's MLP shares the names gate/up/down_proj,
# so target modules are matched with a regex that excludes anything under `visual`.
_NOT_VISUAL = r"^(?!.*\bvisual\b).*\.({names})$"


def use_bf16(cfg: GRPOConfig, device: torch.device) -> bool:
    if cfg.bf16 == "true":
        if device.type == "cpu":
            return True   # CPU autocast supports bf16 (slow on most CPUs, but allowed)
        if not torch.cuda.is_bf16_supported():
            raise UserError("bf16=true but this GPU has no bf16 support; use bf16=false")
        return True
    if cfg.bf16 == "false":
        return False
    return device.type == "cuda" and torch.cuda.is_bf16_supported()


def load_model(cfg: GRPOConfig, device: torch.device, resume_from: Path | None = None, policy=None):
    """(model, processor). A full fine-tune resumes from the checkpoint's weights; a LoRA run
    loads the base weights and then the checkpoint's adapter. Weights stay float32: bf16 is
    applied by autocast, so AdamW's small updates (lr 1e-6) are not lost to bf16 rounding.
    `policy` = (model, processor) already in memory (the benchmark's random-weight 7B) skips loading."""
    from mvp_core.model.policy import load_policy

    if policy is not None:
        model, processor = policy
    else:
        weights = resume_from if (resume_from is not None and not cfg.lora) else cfg.model
        model, processor = load_policy(weights, dtype="float32", device=str(device),
                                       attn_implementation=cfg.attn_implementation or None)
    # Completion log-probs come from full-sequence forwards, never from a cache.
    model.config.use_cache = False
    if cfg.freeze_vision:
        visual = find_visual(model)
        if visual is not None:
            visual.requires_grad_(False)
    if cfg.lora:
        model = add_lora(model, cfg, resume_from)
    if cfg.gradient_checkpointing:
        model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})
        if cfg.lora or cfg.freeze_vision:
            # Inputs of checkpointed blocks must require grad or no gradient reaches LoRA weights.
            model.enable_input_require_grads()
    if not any(p.requires_grad for p in model.parameters()):
        raise UserError("no trainable parameters (check freeze_vision / lora settings)")
    return model, processor


def find_visual(model):
    for name, module in model.named_modules():
        if name.endswith("visual") and hasattr(module, "blocks"):
            return module
    return None


def add_lora(model, cfg: GRPOConfig, resume_from: Path | None):
    from peft import LoraConfig, PeftModel, get_peft_model

    if resume_from is not None:
        return PeftModel.from_pretrained(model, str(resume_from), is_trainable=True)
    target = _NOT_VISUAL.format(names="|".join(cfg.lora_target_modules))
    lcfg = LoraConfig(r=cfg.lora_r, lora_alpha=cfg.lora_alpha, lora_dropout=cfg.lora_dropout,
                      target_modules=target, bias="none")
    try:
        return get_peft_model(model, lcfg)
    except ValueError as e:
        raise UserError(f"lora: {str(e).splitlines()[0]}") from None


def reference_model(model, cfg: GRPOConfig):
    """The frozen reference for the KL term (beta > 0). With LoRA the reference is the base model
    (the adapter disabled), so nothing is copied; otherwise a frozen copy of the initial weights.
    On resume the copy is made from the original `cfg.model`, not the checkpoint."""
    if cfg.beta == 0.0:
        return None
    if cfg.lora:
        return "adapter-disabled"
    from mvp_core.model.policy import load_policy
    device = next(model.parameters()).device
    ref, _ = load_policy(cfg.model, dtype="float32", device=str(device),
                         attn_implementation=cfg.attn_implementation or None)
    ref.requires_grad_(False)
    return ref


def make_optimizer(model, cfg: GRPOConfig):
    params = [p for p in model.parameters() if p.requires_grad]
    opt = torch.optim.AdamW(params, lr=cfg.learning_rate, betas=(cfg.adam_beta1, cfg.adam_beta2),
                            eps=cfg.adam_epsilon, weight_decay=cfg.weight_decay)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: lr_factor(s, cfg))
    return opt, sched


def resume_schedule(optimizer, scheduler, cfg: GRPOConfig, step: int) -> None:
    """Put the LR schedule of the *current* config at optimizer step `step` after a checkpoint's
    optimizer/scheduler state was loaded. The loaded param-group lr is the old schedule's next
    value: resuming a 1-step linear run with max_steps=2 would take step 2 at lr 0 (the old
    schedule's end). Same value as LambdaLR's own `base_lr * lambda(last_epoch)`, so a resume
    under the same config stays bit-exact."""
    lr = cfg.learning_rate * lr_factor(step, cfg)
    for group in optimizer.param_groups:
        group["initial_lr"] = cfg.learning_rate
        group["lr"] = lr
    scheduler.base_lrs = [cfg.learning_rate] * len(optimizer.param_groups)
    scheduler.last_epoch = step
    # get_last_lr() reads this; torch keeps it as a copy of the groups' lr.
    scheduler._last_lr = [group["lr"] for group in optimizer.param_groups]


def lr_factor(step: int, cfg: GRPOConfig) -> float:
    """Multiplier of learning_rate at optimizer step `step` (0-based): linear warm-up (starting at
    1/(warmup+1), not 0, so the first step is not wasted), then constant, linear or cosine to 0."""
    if step < cfg.warmup_steps:
        return float(step + 1) / float(cfg.warmup_steps + 1) if cfg.warmup_steps else 1.0
    if cfg.lr_scheduler_type == "constant":
        return 1.0
    progress = (step - cfg.warmup_steps) / max(1, cfg.max_steps - cfg.warmup_steps)
    progress = min(1.0, progress)
    if cfg.lr_scheduler_type == "linear":
        return max(0.0, 1.0 - progress)
    return 0.5 * (1.0 + math.cos(math.pi * progress))

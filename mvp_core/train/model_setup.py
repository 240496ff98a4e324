"""Everything between "a checkpoint path" and "a model the loop can train": loading, freezing the
vision tower, LoRA, gradient checkpointing, the frozen reference, AdamW and its schedule (transformers.get_scheduler)."""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import torch

from mvp_core.errors import UserError
from mvp_core.train.config import GRPOConfig

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


@dataclass(frozen=True)
class EndTokens:
    """The one end-of-sequence rule of SFT and GRPO. `target` ends every SFT target (the chat
    template's end of turn, what the model learns to emit); `stop` is every id that ends a sampled
    GRPO completion (the sampler stops there and the completion is trimmed there), and always holds
    `target`, so a model taught by SFT to stop is stopped by GRPO; `pad` fills batches."""
    target: int
    stop: frozenset
    pad: int


def end_ids(model, processor) -> EndTokens:
    """The end tokens of this model (EndTokens): the turn end `<|im_end|>` where the vocabulary has
    it (Qwen chat models), else the tokenizer's eos; the stop set adds the tokenizer's eos and the
    checkpoint's `generation_config.eos_token_id` (Qwen-VL Instruct ships both <|im_end|> and
    <|endoftext|>)."""
    tok = processor.tokenizer
    target = tok.convert_tokens_to_ids("<|im_end|>") if "<|im_end|>" in tok.get_vocab() else tok.eos_token_id
    gen_eos = model.generation_config.eos_token_id
    gen_eos = list(gen_eos) if isinstance(gen_eos, (list, tuple)) else [gen_eos]
    stop = frozenset(int(i) for i in {target, tok.eos_token_id, *gen_eos} if i is not None)
    pad = tok.pad_token_id if tok.pad_token_id is not None else tok.eos_token_id
    return EndTokens(target=int(target), stop=stop, pad=int(pad if pad is not None else target))


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


# transformers' names for the schedules: its "constant" ignores warm-up, "constant_with_warmup" does not.
_SCHEDULES = {"constant": "constant_with_warmup", "linear": "linear", "cosine": "cosine"}


def make_schedule(optimizer, cfg: GRPOConfig):
    """The LR schedule of `cfg` (transformers.get_scheduler, as TRL's trainer): linear warm-up from
    0 over warmup_steps, then constant, linear or cosine to 0 at max_steps."""
    from transformers import get_scheduler
    return get_scheduler(_SCHEDULES[cfg.lr_scheduler_type], optimizer, num_warmup_steps=cfg.warmup_steps,
                         num_training_steps=cfg.max_steps)


def make_optimizer(model, cfg: GRPOConfig):
    """AdamW over the trainable parameters, with torch's fused kernel where it applies: the optimizer
    TRL's trainers use by default (transformers' "adamw_torch_fused" on torch >= 2.8), the same AdamW
    in one kernel per parameter instead of ~10 small ops (a GRPO step's AdamW went from 18 to 5.7 ms on
    the bench's policy on CPU, docs/grpo.md). A run resumed from a checkpoint keeps the implementation
    it was saved with (its param group's `fused` is restored with the state), so resume stays bit-exact."""
    params = [p for p in model.parameters() if p.requires_grad]
    opt = torch.optim.AdamW(params, lr=cfg.learning_rate, betas=(cfg.adam_beta1, cfg.adam_beta2),
                            eps=cfg.adam_epsilon, weight_decay=cfg.weight_decay, fused=fused_applies(params) or None)
    return opt, make_schedule(opt, cfg)


def fused_applies(params: list) -> bool:
    """Whether torch's fused AdamW takes these parameters: plain float tensors on the CPU or a CUDA
    device (FSDP's sharded DTensors and other devices keep the default implementation)."""
    return bool(params) and all(type(p.data) is torch.Tensor and p.device.type in ("cpu", "cuda")
                                and p.is_floating_point() for p in params)


def optimizer_step(model, max_grad_norm: float, optimizer, scheduler) -> float:
    """Clip the trainable parameters' gradient norm (when max_grad_norm > 0), step the optimizer and
    the schedule, clear the gradients; returns the norm before clipping."""
    params = [p for p in model.parameters() if p.requires_grad]
    if max_grad_norm > 0:
        gn = float(torch.nn.utils.clip_grad_norm_(params, max_grad_norm))
    else:
        gn = float(torch.norm(torch.stack([p.grad.norm() for p in params if p.grad is not None])))
    optimizer.step()
    scheduler.step()
    optimizer.zero_grad(set_to_none=True)
    return gn


def resume_schedule(optimizer, scheduler, cfg: GRPOConfig, step: int) -> None:
    """Put the LR schedule of the *current* config at optimizer step `step` after a checkpoint's
    optimizer/scheduler state was loaded. The loaded param-group lr is the old schedule's next
    value: resuming a 1-step linear run with max_steps=2 would take step 2 at lr 0 (the old
    schedule's end). Same value as LambdaLR's own `base_lr * lambda(last_epoch)`, so a resume
    under the same config stays bit-exact. (The scheduler was built from the current config, and
    loading its state keeps transformers' schedule functions, whose state is in their arguments.)"""
    lr = cfg.learning_rate * scheduler.lr_lambdas[0](step)
    for group in optimizer.param_groups:
        group["initial_lr"] = cfg.learning_rate
        group["lr"] = lr
    scheduler.base_lrs = [cfg.learning_rate] * len(optimizer.param_groups)
    scheduler.last_epoch = step
    # get_last_lr() reads this; torch keeps it as a copy of the groups' lr.
    scheduler._last_lr = [group["lr"] for group in optimizer.param_groups]


def lr_factor(step: int, cfg: GRPOConfig) -> float:
    """Multiplier of learning_rate at optimizer step `step` (0-based) under `cfg`'s schedule."""
    probe = torch.optim.SGD([torch.zeros(1, requires_grad=True)], lr=1.0)
    return float(make_schedule(probe, cfg).lr_lambdas[0](step))

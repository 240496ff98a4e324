"""GRPO: one optimizer step, top to bottom. The run around it (start or resume, run directory,
status, metrics and trackers, held-out evaluation, checkpoints, the stop on SIGTERM) is the one
lifecycle both trainers share (lifecycle.py); `train(cfg)` hands it this step. One step:

  1. this process's puzzles of the step (a pure function of seed and step: resumable)
  2. `rollout`: G sampled completions per puzzle with the current policy
  3. `score` every completion; `advantages`: all processes' rewards gathered, group-normalised
  4. `policy_gradient`: log-probs in micro-batches with gradient (the reference's without),
     clipped surrogate loss (loss_type), backward, accumulated over micro-batches
  5. `clip_and_step`: clip the gradient norm, AdamW step, schedule step
  6. the step's metrics (TRL's names) and its completions (completions/step_N.parquet)

Old log-probs equal the current ones detached (one optimisation pass per generation batch, TRL's
default), so the ratio is 1 in value but still carries the policy gradient."""
from __future__ import annotations

import time
from contextlib import nullcontext
from dataclasses import dataclass

import torch

from mvp_core.train import batching, lifecycle, rewards, shared_prompt
from mvp_core.train import distributed as D
from mvp_core.train.config import GRPOConfig
from mvp_core.train.lifecycle import Trainer
from mvp_core.train.loss import entropy_from_logits, group_advantages, grpo_loss, selective_log_softmax
from mvp_core.train.model_setup import find_visual, optimizer_step, reference_model
from mvp_core.train.runlog import RunLogger, step_metrics
from mvp_core.model import decode, vl_parts
from mvp_core.model.rollout import scored_row
from mvp_core.model.sampler import SamplerSettings, placeholder_token_ids, sample


def train(cfg: GRPOConfig, resume: bool = False, on_step=None, policy=None) -> dict:
    """Run (or resume) a GRPO run; returns {'state', 'step', 'metrics', 'run_dir'}. `on_step(step,
    metrics)` is called on every process after each step; `policy` is an in-memory (model,
    processor) to train instead of loading `cfg.model`."""
    recipe = lifecycle.Recipe(kind="grpo", step=train_step, line=step_line, describe=describe,
                              reference=reference_model, at_start=warn_off_policy)
    return lifecycle.run(cfg, recipe, resume=resume, on_step=on_step, policy=policy)


def describe(t: Trainer) -> str:
    params = list(t.model.parameters())
    return (f"model {t.cfg.model}: {sum(p.numel() for p in params) / 1e6:.2f}M params, "
            f"{sum(p.numel() for p in params if p.requires_grad) / 1e6:.2f}M trainable, "
            f"{t.info.world} process(es) on {t.info.device.type}, bf16={t.bf16}, {len(t.data)} puzzles")


def warn_off_policy(t: Trainer, log: RunLogger) -> None:
    """One warning line when the sampler is not the policy the log-probs describe (sampler.py)."""
    off = SamplerSettings.from_config(t.cfg).off_policy_settings()
    if off:
        log.info(f"warning: {', '.join(off)} make the sampler differ from the policy its log-probs describe "
                 f"(metrics: sampler/non_policy = 1)")


def step_line(m: dict) -> str:
    line = (f"step {m['step']}: reward {m['reward']:.3f} (std {m['reward_std']:.3f}) "
            f"len {m['completion_length']:.1f} kl {m['kl']:.4f} loss {m['loss']:.4f} "
            f"grad {_num(m['grad_norm'])} lr {m['lr']:.2e} {m['step_s']:.2f}s")
    if "eval_reward" in m:
        line += f" | eval reward {m['eval_reward']:.3f} exact {m['eval_exact']:.3f} format {m['eval_format']:.3f}"
    return line


def _num(x) -> str:
    return "non-finite" if x is None else f"{x:.3f}"


# ---- one step ----------------------------------------------------------------------------------

def train_step(t: Trainer, step: int, log: RunLogger) -> dict:
    """The optimizer step that takes the run from `step` to `step + 1`; returns its metrics."""
    t0 = time.perf_counter()
    data = t.data
    ctx = StepContext(t.cfg, t.info, t.train_model, t.model, t.ref, t.processor, t.eos_ids, t.pad_id, t.bf16)
    puzzles = data.puzzles_for_step(step, t.info.rank, t.info.world)
    out = run_step(ctx, puzzles, data)
    lr = t.optimizer.param_groups[0]["lr"]   # the lr this step applies (read before the schedule steps)
    gn = clip_and_step(t.cfg, t.train_model, t.optimizer, t.scheduler, ctx)
    t_log = time.perf_counter()
    log.completions(step + 1, out["rows"], save=t.cfg.save_completions)
    ctx.timer["other"] += time.perf_counter() - t_log
    metrics = step_metrics(out, step + 1, t.info, grad_norm=gn, lr=float(lr),
                           step_s=time.perf_counter() - t0, epoch=data.epoch_of(step + 1, t.info.world))
    metrics["sampler/non_policy"] = 0.0 if SamplerSettings.from_config(t.cfg).is_exact_policy() else 1.0
    return metrics


class StepContext:
    def __init__(self, cfg, info, train_model, model, ref, processor, eos_ids, pad_id, bf16):
        self.cfg, self.info, self.train_model, self.model, self.ref = cfg, info, train_model, model, ref
        self.processor, self.eos_ids, self.pad_id, self.bf16 = processor, eos_ids, pad_id, bf16
        self.vision = None      # the rollout prefill's features of a frozen vision tower (reuses_vision)
        self.prompt_pass = None  # the step's one prompt forward, for the rollout and the loss (one_prompt_pass)
        self.timer = {"generate": 0.0, "score": 0.0, "logprob": 0.0, "backward": 0.0, "optimizer": 0.0,
                      "other": 0.0}

    def lap(self, key: str, t0: float) -> None:
        """Add the time since t0 to timer[key]; on a GPU wait for queued kernels first, or the
        split would charge them to whatever phase synchronises next."""
        if self.info.device.type == "cuda":
            torch.cuda.synchronize(self.info.device)
        self.timer[key] += time.perf_counter() - t0

    def autocast(self):
        if not self.bf16:
            return nullcontext()
        return torch.autocast(device_type=self.info.device.type, dtype=torch.bfloat16)


@dataclass
class Rollout:
    seq_encs: list[dict]                # the prompts, each repeated G times: sequence i is puzzle i // G's
    completions: list[torch.Tensor]     # one sampled completion per sequence


def run_step(ctx: StepContext, puzzles: list, data) -> dict:
    """Rollout, reward, advantage, loss and backward for this process's puzzles (no optimizer step)."""
    roll = rollout(ctx, puzzles, data)
    texts, scores = score(ctx, puzzles, roll)
    all_r, adv, my_adv = advantages(ctx, scores)
    stats, n_tokens_local = policy_gradient(ctx, roll, my_adv)
    rows = completion_rows(puzzles, roll.completions, texts, scores, my_adv, ctx.info, ctx.cfg.num_generations,
                           ctx.eos_ids)
    return {"rewards": all_r, "adv": adv, "local_scores": scores, "stats": stats, "rows": rows,
            "n_local": len(scores), "timer": ctx.timer, "n_tokens_local": n_tokens_local,
            # for the logged lengths (runlog.step_metrics): which completions ended on a stop token, prompt tokens
            "ended_local": [bool(c.numel()) and int(c[-1]) in ctx.eos_ids for c in roll.completions],
            "prompt_tokens_local": sum(int(e["input_ids"].shape[-1]) for e in roll.seq_encs)}


def rollout(ctx: StepContext, puzzles: list, data) -> Rollout:
    """G sampled completions per puzzle with the current policy."""
    t = time.perf_counter()
    encs = [data.encode(p, ctx.processor) for p in puzzles]
    seq_encs = [e for e in encs for _ in range(ctx.cfg.num_generations)]
    ctx.prompt_pass = one_prompt_pass(ctx, seq_encs)
    completions = generate(ctx, seq_encs)
    ctx.lap("generate", t)
    return Rollout(seq_encs, completions)


def score(ctx: StepContext, puzzles: list, roll: Rollout) -> tuple[list[str], list[dict]]:
    """(decoded texts, reward terms) of every completion."""
    t = time.perf_counter()
    cfg, G = ctx.cfg, ctx.cfg.num_generations
    texts = ctx.processor.tokenizer.batch_decode(roll.completions, skip_special_tokens=True)
    scores = [rewards.score(cfg.reward, txt, p["answer"], [o["label"] for o in p["options"]], cfg.reward_weights)
              for i, txt in enumerate(texts) for p in [puzzles[i // G]]]
    ctx.lap("score", t)
    return texts, scores


def advantages(ctx: StepContext, scores: list[dict]):
    """Every process's rewards gathered, group-normalised over whole groups: (all rewards, the
    GroupAdvantages, this process's slice of the advantages)."""
    t = time.perf_counter()
    info = ctx.info
    local_r = torch.tensor([s["reward"] for s in scores], dtype=torch.float32)
    all_r = D.all_gather_cat(local_r.to(_comm(info)), info).cpu()
    adv = group_advantages(all_r, ctx.cfg.num_generations, ctx.cfg.scale_rewards)
    lo = info.rank * len(local_r)
    my_adv = adv.advantages[lo:lo + len(local_r)]
    ctx.lap("score", t)
    return all_r, adv, my_adv


def policy_gradient(ctx: StepContext, roll: Rollout, my_adv: torch.Tensor) -> tuple[dict, int]:
    """Log-probs in micro-batches, clipped surrogate loss, backward: gradients accumulate across
    micro-batches. Returns (loss / kl / clip / entropy sums, this process's completion tokens)."""
    cfg, info = ctx.cfg, ctx.info
    n_tokens_local = sum(int(batching.completion_mask_1d(c, ctx.eos_ids).sum()) for c in roll.completions)
    dapo_norm = D.all_sum(n_tokens_local, info) / info.world
    n = len(roll.seq_encs)
    mb = cfg.per_device_train_batch_size
    chunks = [range(s, min(s + mb, n)) for s in range(0, n, mb)]
    stats = {"loss": 0.0, "kl": 0.0, "clip_low": 0.0, "clip_high": 0.0, "entropy": 0.0, "tokens": 0.0}
    ctx.train_model.train()
    for k, idx in enumerate(chunks):
        encs, comps = [roll.seq_encs[i] for i in idx], [roll.completions[i] for i in idx]
        ref_logps = reference_logps(ctx, encs, comps) if cfg.beta else None
        with D.grad_sync(ctx.train_model, last=k == len(chunks) - 1):
            out, entropy, mask = _micro_batch_backward(ctx, encs, comps, my_adv[list(idx)], ref_logps, len(chunks),
                                                       dapo_norm)
        _add_stats(stats, out, entropy, mask)
    ctx.prompt_pass = None
    return stats, n_tokens_local


def _micro_batch_backward(ctx: StepContext, encs: list[dict], comps: list[torch.Tensor], adv: torch.Tensor,
                          ref_logps, n_chunks: int, dapo_norm: float):
    cfg = ctx.cfg
    t = time.perf_counter()
    logps, entropy, mask = completion_logps(ctx, ctx.train_model, encs, comps, with_entropy=True,
                                            prompt_pass=ctx.prompt_pass)
    out = grpo_loss(logps, logps.detach(), adv.to(logps.device), mask,
                    loss_type=cfg.loss_type, epsilon=cfg.epsilon, epsilon_high=cfg.eps_high,
                    beta=cfg.beta, ref_logps=ref_logps, max_completion_length=cfg.max_completion_length,
                    grad_accum=n_chunks, dapo_normalizer=dapo_norm)
    ctx.lap("logprob", t)
    t = time.perf_counter()
    out.loss.backward()
    ctx.lap("backward", t)
    return out, entropy, mask


def _add_stats(stats: dict, out, entropy: torch.Tensor, completion_mask: torch.Tensor) -> None:
    w = out.n_tokens
    # the value backward() saw: summed over micro-batches it is the loss the step optimises (for dapo
    # the normaliser already spans the step, so dividing by n_chunks again would shrink it)
    stats["loss"] += float(out.loss.detach())
    for key, val in (("kl", out.kl), ("clip_low", out.clip_low), ("clip_high", out.clip_high)):
        stats[key] += val * w
    stats["entropy"] += float((entropy * completion_mask.float()).sum())
    stats["tokens"] += w


@torch.no_grad()
def generate(ctx: StepContext, seq_encs: list[dict]) -> list[torch.Tensor]:
    """One sampled completion per sequence (prompts repeated G times), as 1-D ids trimmed after
    the first eos. Batched over all of this process's sequences."""
    cfg = ctx.cfg
    gen_model = D.unwrap(ctx.train_model)
    gen_model.eval()
    # the run's own sampler settings, never the checkpoint's generation_config (sampler.py), and its
    # stop tokens the one end-of-sequence rule (model_setup.end_ids), the token SFT targets end with
    settings = SamplerSettings.from_config(cfg)
    with ctx.autocast(), D.gathered_for_generate(gen_model):
        if ctx.prompt_pass is not None:        # decoded from the step's prompt forward (one_prompt_pass)
            rows, first, deltas = ctx.prompt_pass.decode_inputs(settings.max_new_tokens)
            new = decode.sample_from_prefill(gen_model, rows, deltas, settings, ctx.pad_id, ctx.eos_ids,
                                             first_scores=first).clone()
            return [batching.trim_completion(row.cpu(), ctx.eos_ids) for row in new]
        # each puzzle's prompt prefilled once for its G samples (shared_prompt.py), or every row's whole
        vision: list = []
        batch = shared_prompt.prefill_for_generate(gen_model, seq_encs, ctx.pad_id, ctx.info.device,
                                                   share=cfg.share_prompt, vision_out=vision)
        ctx.vision = vision[0] if vision and reuses_vision(ctx) else None
        if batch is not None and decode.supports(settings):
            # decode runs under inference_mode (its tensors then never reach autograd); the clone is a
            # normal tensor, which the log-prob forward may save for backward
            new = decode.sample_from_prefill(gen_model, batch, vl_parts.rope_owner(gen_model).rope_deltas,
                                             settings, ctx.pad_id, ctx.eos_ids).clone()
        else:
            if batch is None:
                batch = batching.collate(seq_encs, None, ctx.pad_id, ctx.info.device)
                batch.pop("completion_mask")
                batch.pop("prompt_len")
            prompt_len = batch["input_ids"].shape[1]
            new = sample(gen_model, batch, settings, use_cache=True, pad_token_id=ctx.pad_id,
                         eos_token_id=sorted(ctx.eos_ids))[:, prompt_len:]
    return [batching.trim_completion(row.cpu(), ctx.eos_ids) for row in new]


def completion_logps(ctx: StepContext, model, encs: list[dict], comps: list[torch.Tensor], with_entropy: bool = False,
                     prompt_pass: shared_prompt.PromptPass | None = None):
    """(log p(completion token) under `model` at the sampling temperature (B, T), entropy or None,
    the completion mask (B, T)). `prompt_pass`: the policy's prompt forward of this step, if any."""
    with ctx.autocast():
        logits, mask, ids = completion_logits(ctx, model, encs, comps, prompt_pass)
    logits = logits / ctx.cfg.temperature
    # The sampler never emits vision placeholders (suppressed): the policy is the distribution
    # renormalised without them, so the log-probs must be too (sampler.py).
    blocked = placeholder_token_ids(D.unwrap(model))
    if blocked:
        logits = logits.clone()
        logits[..., blocked] = float("-inf")
    logps = selective_log_softmax(logits, ids)
    entropy = entropy_from_logits(logits) if with_entropy else None
    return logps, entropy, mask


def one_prompt_pass(ctx: StepContext, seq_encs: list[dict]) -> shared_prompt.PromptPass | None:
    """The step's prompts run once, with gradient, for both the rollout and the loss (shared_prompt.PromptPass;
    docs/grpo.md, "One prompt forward per step"), where that computes exactly what the two would run apart:
    the loss takes every sequence in one micro-batch and shares its prompts (so its prompt forward is this
    one), the decode loop reproduces the sampler, and nothing in the model is random in training mode
    (dropout: the rollout must sample from the policy itself). Else None: the rollout prefills on its own."""
    cfg, model = ctx.cfg, ctx.train_model
    if not (shares_prompts(ctx, model, seq_encs) and not lifecycle.sharded(cfg, ctx.info)
            and len(seq_encs) <= cfg.per_device_train_batch_size and decode.supports(SamplerSettings.from_config(cfg))
            and ctx.pad_id is not None and ctx.eos_ids and _without_dropout(model)):
        return None
    model.train()
    with ctx.autocast():
        return shared_prompt.prompt_pass(model, seq_encs, ctx.pad_id, ctx.info.device)


def _without_dropout(model) -> bool:
    """Whether nothing in `model` drops anything in training mode: every dropout layer's rate and every
    attention's `attention_dropout` (transformers' attention modules apply it while training) are 0."""
    for m in model.modules():
        rate = m.p if isinstance(m, torch.nn.Dropout) else getattr(m, "attention_dropout", 0.0)
        if isinstance(rate, (int, float)) and rate > 0:
            return False
    return True


def reuses_vision(ctx: StepContext) -> bool:
    """Whether the log-prob forward may take the rollout prefill's vision features instead of running
    the tower again: only a frozen tower's (`freeze_vision`; its features then carry no gradient), and
    not under FSDP, whose vision unit gathers its own parameters in its forward."""
    if lifecycle.sharded(ctx.cfg, ctx.info):
        return False
    visual = find_visual(D.unwrap(ctx.train_model))
    return visual is not None and not any(p.requires_grad for p in visual.parameters())


def shares_prompts(ctx: StepContext, model, encs: list[dict]) -> bool:
    """Whether the log-prob forward of `encs` runs each group's prompt once (shared_prompt.py, `share_prompt`):
    the model allows it and the measured rule says it pays; else every sequence runs whole."""
    return (ctx.cfg.share_prompt and shared_prompt.can_share(model, ctx.cfg.gradient_checkpointing)
            and shared_prompt.pays(encs))


def completion_logits(ctx: StepContext, model, encs: list[dict], comps: list[torch.Tensor],
                      prompt_pass: shared_prompt.PromptPass | None = None):
    """(logits (B, T, V) predicting each completion token, completion mask (B, T), the completion
    ids (B, T), padded): each group's prompt run once where the model allows and it pays
    (shared_prompt.py, `share_prompt`), taken from `prompt_pass` where the rollout ran it already,
    else every sequence whole."""
    if shares_prompts(ctx, model, encs):
        vision = ctx.vision if model is ctx.train_model else None      # never the reference's
        logits, batch = shared_prompt.completion_logits(model, encs, comps, ctx.pad_id, ctx.info.device, ctx.eos_ids,
                                                        vision=vision, prompt_pass=prompt_pass)
    else:
        batch = batching.collate(encs, comps, ctx.pad_id, ctx.info.device, ctx.eos_ids)
        inputs = {k: v for k, v in batch.items() if k not in ("completion_mask", "prompt_len")}
        n_comp = batch["completion_mask"].shape[1]
        logits = model(**inputs, logits_to_keep=n_comp + 1, use_cache=False).logits[:, :-1, :]  # t predicts t+1
    mask = batch["completion_mask"]
    return logits, mask, batch["input_ids"][:, -mask.shape[1]:]


@torch.no_grad()
def reference_logps(ctx: StepContext, encs: list[dict], comps: list[torch.Tensor]) -> torch.Tensor:
    """The frozen reference's log-probs (B, T), in forwards of logprob_batch_size sequences."""
    size = ctx.cfg.logprob_batch_size
    width = max(int(c.numel()) for c in comps)
    out = torch.zeros((len(encs), width), device=ctx.info.device)
    for s in range(0, len(encs), size):
        sub_e, sub_c = encs[s:s + size], comps[s:s + size]
        if ctx.ref == "adapter-disabled":        # LoRA: the reference is the base model
            peft_model = D.unwrap(ctx.train_model)
            with peft_model.disable_adapter():
                lp = completion_logps(ctx, peft_model, sub_e, sub_c)[0]
        else:
            lp = completion_logps(ctx, ctx.ref, sub_e, sub_c)[0]
        out[s:s + lp.shape[0], :lp.shape[1]] = lp
    return out


def clip_and_step(cfg: GRPOConfig, model, optimizer, scheduler, ctx: StepContext) -> float:
    t = time.perf_counter()
    gn = optimizer_step(model, cfg.max_grad_norm, optimizer, scheduler)
    ctx.lap("optimizer", t)
    return gn


def completion_rows(puzzles, completions, texts, scores, adv, info, G, eos_ids) -> list[dict]:
    """The step's completions as rows of the one scored-completion schema (mvp_core/model/rollout.py),
    `total` being the reward this run optimises, plus this process's rank (the step is added on write)."""
    return [dict(scored_row(puzzles[i // G], i % G, txt, int(batching.completion_mask_1d(c, eos_ids).sum()), s,
                            s["reward"], float(adv[i])), rank=info.rank)
            for i, (c, txt, s) in enumerate(zip(completions, texts, scores))]


def _comm(info: D.DistInfo) -> torch.device:
    return info.device if info.device.type == "cuda" else torch.device("cpu")

"""The GRPO training loop. One optimizer step, top to bottom:

  1. take this process's puzzles of the step (a pure function of seed and step: resumable)
  2. sample G completions per puzzle with the current policy
  3. score every completion; gather all processes' rewards; group-normalised advantages
  4. log-probs of the completions, in micro-batches, with gradient; the reference's without
  5. clipped surrogate loss (loss_type), backward, accumulate over micro-batches
  6. clip the gradient norm, AdamW step, schedule step
  7. log metrics and completions (rank 0), checkpoint every save_steps, stop cleanly on SIGTERM

Old log-probs equal the current ones detached (one optimisation pass per generation batch, TRL's
default), so the ratio is 1 in value but still carries the policy gradient."""
from __future__ import annotations

import signal
import time
from contextlib import nullcontext

import torch

from mvp_core.grpo import batching, checkpoint, rewards
from mvp_core.grpo import distributed as D
from mvp_core.grpo.config import GRPOConfig
from mvp_core.grpo.data import PuzzleSet
from mvp_core.grpo.heldout import HeldOut
from mvp_core.grpo.loss import entropy_from_logits, group_advantages, grpo_loss, selective_log_softmax
from mvp_core.grpo.model_setup import load_model, make_optimizer, reference_model, resume_schedule, use_bf16
from mvp_core.grpo.rundir import RunDir
from mvp_core.grpo.runlog import RunLogger, step_metrics
from mvp_core.model.sampler import SamplerSettings, placeholder_token_ids, sample


class StopFlag:
    """SIGTERM / SIGINT set a flag; the loop finishes the step, saves and exits. A second SIGINT
    interrupts at once."""

    def __init__(self):
        self.set = False
        self._old = {}

    def __enter__(self):
        for sig in (signal.SIGTERM, signal.SIGINT):
            self._old[sig] = signal.signal(sig, self._handle)
        return self

    def _handle(self, signum, frame):
        if self.set and signum == signal.SIGINT:
            raise KeyboardInterrupt
        self.set = True

    def __exit__(self, *exc):
        for sig, old in self._old.items():
            signal.signal(sig, old)


def train(cfg: GRPOConfig, resume: bool = False, on_step=None, policy=None) -> dict:
    """Run (or resume) a training run; returns a summary. `on_step(step, metrics)` is called on
    every process after each step (tests use it to interrupt a run at a given step); `policy`
    is an in-memory (model, processor) to train instead of loading `cfg.model`."""
    info = D.init_distributed()
    try:
        with StopFlag() as stop:
            return _train(cfg, resume, on_step, info, stop, policy)
    finally:
        D.shutdown(info)


def _train(cfg: GRPOConfig, resume: bool, on_step, info: D.DistInfo, stop: StopFlag, policy) -> dict:
    data = PuzzleSet.open(cfg)
    run = RunDir(cfg.output_dir)
    if info.is_main:
        run.create(resume)
    D.barrier(info)
    log = RunLogger(run, info)

    # ---- where to start: fresh, or the latest complete checkpoint -----------------------------
    start_step, ckpt = 0, None
    if resume:
        latest = run.latest_checkpoint()
        if latest is not None:
            start_step, ckpt = latest
            log.info(f"resuming from {ckpt} (step {start_step})")
        else:
            log.info("resume: no checkpoint yet, starting from step 0")
    if info.is_main:
        if start_step == 0:
            run.write_config(data.config_yaml(cfg, info.world))
        run.truncate_metrics(start_step)
        run.write_status(state="running", step=start_step, max_steps=cfg.max_steps)

    # ---- model, reference, optimizer ---------------------------------------------------------
    torch.manual_seed(cfg.seed)   # identical LoRA init on every rank
    model, processor = load_model(cfg, info.device, ckpt, policy)
    ref = reference_model(model, cfg)
    train_model = D.wrap_model(model, info, cfg.fsdp)
    optimizer, scheduler = make_optimizer(train_model, cfg)
    if ckpt is not None:
        full = (lambda st: D.load_optimizer_full_state(train_model, optimizer, st)) if (cfg.fsdp and info.enabled) else None
        checkpoint.load_optimizer_state(ckpt, optimizer, scheduler, full)
        # The schedule follows this config (max_steps/warm-up/lr may differ from the saved run's).
        resume_schedule(optimizer, scheduler, cfg, start_step)
    # Sampling differs across ranks; restored exactly on resume.
    torch.manual_seed(cfg.seed * 1000 + info.rank)
    if ckpt is not None and not checkpoint.load_rng(ckpt, info.rank):
        log.info("checkpoint has no RNG state for this rank; sampling re-seeded")
    bf16 = use_bf16(cfg, info.device)
    tok = processor.tokenizer
    eos_ids = frozenset(i for i in {tok.eos_token_id, *_as_list(model.generation_config.eos_token_id)}
                        if i is not None)
    pad_id = tok.pad_token_id if tok.pad_token_id is not None else tok.eos_token_id
    log.info(f"model {cfg.model}: {sum(p.numel() for p in model.parameters()) / 1e6:.2f}M params, "
             f"{sum(p.numel() for p in model.parameters() if p.requires_grad) / 1e6:.2f}M trainable, "
             f"{info.world} process(es) on {info.device.type}, bf16={bf16}, {len(data)} puzzles")

    # Held-out puzzles (videos not trained on), answered greedily every eval_steps (heldout.py).
    # Rank 0 alone answers them; FSDP shards the weights across ranks, so there it is skipped.
    heldout = HeldOut.from_config(cfg) if not (cfg.fsdp and info.enabled) else None

    # ---- the steps ---------------------------------------------------------------------------
    step = start_step
    last_metrics: dict = {}
    while step < cfg.max_steps:
        t0 = time.perf_counter()
        puzzles = data.puzzles_for_step(step, info.rank, info.world)
        ctx = StepContext(cfg, info, train_model, model, ref, processor, eos_ids, pad_id, bf16)
        out = run_step(ctx, puzzles, data)
        lr = optimizer.param_groups[0]["lr"]   # the lr this step applies (read before the schedule steps)
        gn = clip_and_step(cfg, train_model, optimizer, scheduler, ctx)
        step += 1
        t_log = time.perf_counter()
        log.completions(step, out["rows"], save=cfg.save_completions)
        ctx.timer["other"] += time.perf_counter() - t_log
        metrics = step_metrics(out, step, info, grad_norm=gn, lr=float(lr),
                               step_s=time.perf_counter() - t0, epoch=data.epoch_of(step, info.world))
        if on_step is not None:     # before the stop check: a signal during the step stops at this step
            on_step(step, metrics)
        stopping = D.any_rank(stop.set, info)
        if heldout is not None and _eval_due(cfg, step, stopping):
            if info.is_main:
                metrics.update(heldout.evaluate(D.unwrap(train_model), processor))
            D.barrier(info)
        log.metrics(step, metrics)
        last_metrics = metrics
        if step % cfg.save_steps == 0 or step == cfg.max_steps or stopping:
            save(run, step, cfg, train_model, model, processor, optimizer, scheduler, info)
            log.info(f"checkpoint step {step}")
        if stopping:
            log.info(f"stopped by signal after step {step}; resume with --resume")
            if info.is_main:
                run.write_status(state="stopped", step=step)
            return {"state": "stopped", "step": step, "metrics": last_metrics, "run_dir": str(run.path)}
    if info.is_main:
        run.write_status(state="finished", step=step)
    log.info(f"finished at step {step}")
    return {"state": "finished", "step": step, "metrics": last_metrics, "run_dir": str(run.path)}


def _eval_due(cfg, step: int, stopping: bool) -> bool:
    every = cfg.eval_steps
    return step == cfg.max_steps or stopping or (every > 0 and step % every == 0)


class StepContext:
    def __init__(self, cfg, info, train_model, model, ref, processor, eos_ids, pad_id, bf16):
        self.cfg, self.info, self.train_model, self.model, self.ref = cfg, info, train_model, model, ref
        self.processor, self.eos_ids, self.pad_id, self.bf16 = processor, eos_ids, pad_id, bf16
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


def run_step(ctx: StepContext, puzzles: list, data) -> dict:
    cfg, info, G = ctx.cfg, ctx.info, ctx.cfg.num_generations

    # 2. sample G completions per puzzle
    t = time.perf_counter()
    encs = [data.encode(p, ctx.processor) for p in puzzles]
    seq_encs = [e for e in encs for _ in range(G)]          # sequence i belongs to puzzle i // G
    completions = generate(ctx, seq_encs)
    ctx.lap("generate", t)

    # 3. score, gather rewards from every process, advantages over whole groups
    t = time.perf_counter()
    texts = ctx.processor.tokenizer.batch_decode(completions, skip_special_tokens=True)
    scores = [rewards.score(cfg.reward, txt, p["answer"], [o["label"] for o in p["options"]], cfg.reward_weights)
              for i, txt in enumerate(texts) for p in [puzzles[i // G]]]
    local_r = torch.tensor([s["reward"] for s in scores], dtype=torch.float32)
    all_r = D.all_gather_cat(local_r.to(_comm(info)), info).cpu()
    adv = group_advantages(all_r, G, cfg.scale_rewards)
    lo = info.rank * len(local_r)
    my_adv = adv.advantages[lo:lo + len(local_r)]
    ctx.lap("score", t)

    # 4-5. log-probs in micro-batches, loss, backward (gradients accumulate across micro-batches)
    n_tokens_local = sum(int(batching.completion_mask_1d(c, ctx.eos_ids).sum()) for c in completions)
    dapo_norm = D.all_sum(n_tokens_local, info) / info.world
    mb = cfg.per_device_train_batch_size
    chunks = [range(s, min(s + mb, len(seq_encs))) for s in range(0, len(seq_encs), mb)]
    stats = {"loss": 0.0, "kl": 0.0, "clip_low": 0.0, "clip_high": 0.0, "entropy": 0.0, "tokens": 0.0}
    ctx.train_model.train()
    for k, idx in enumerate(chunks):
        batch = batching.collate([seq_encs[i] for i in idx], [completions[i] for i in idx], ctx.pad_id,
                                 info.device, ctx.eos_ids)
        ref_logps = (reference_logps(ctx, [seq_encs[i] for i in idx], [completions[i] for i in idx],
                                     batch["completion_mask"].shape[1]) if cfg.beta else None)
        sync = k == len(chunks) - 1
        with (nullcontext() if sync or not hasattr(ctx.train_model, "no_sync") else ctx.train_model.no_sync()):
            t = time.perf_counter()
            logps, entropy = completion_logps(ctx, ctx.train_model, batch, with_entropy=True)
            out = grpo_loss(logps, logps.detach(), my_adv[list(idx)].to(logps.device), batch["completion_mask"],
                            loss_type=cfg.loss_type, epsilon=cfg.epsilon, epsilon_high=cfg.eps_high,
                            beta=cfg.beta, ref_logps=ref_logps, max_completion_length=cfg.max_completion_length,
                            grad_accum=len(chunks), dapo_normalizer=dapo_norm)
            ctx.lap("logprob", t)
            t = time.perf_counter()
            out.loss.backward()
            ctx.lap("backward", t)
        m = batch["completion_mask"].float()
        w = out.n_tokens
        stats["loss"] += out.policy_loss / len(chunks)
        for key, val in (("kl", out.kl), ("clip_low", out.clip_low), ("clip_high", out.clip_high)):
            stats[key] += val * w
        stats["entropy"] += float((entropy * m).sum())
        stats["tokens"] += w

    rows = completion_rows(puzzles, completions, texts, scores, my_adv, info, G, ctx.eos_ids)
    return {"rewards": all_r, "adv": adv, "local_scores": scores, "stats": stats, "rows": rows,
            "n_local": len(local_r), "timer": ctx.timer, "n_tokens_local": n_tokens_local}


@torch.no_grad()
def generate(ctx: StepContext, seq_encs: list[dict]) -> list[torch.Tensor]:
    """One sampled completion per sequence (prompts repeated G times), as 1-D ids trimmed after
    the first eos. Batched over all of this process's sequences."""
    cfg = ctx.cfg
    gen_model = D.unwrap(ctx.train_model)
    gen_model.eval()
    batch = batching.collate(seq_encs, None, ctx.pad_id, ctx.info.device)
    batch.pop("completion_mask")
    prompt_len = batch.pop("prompt_len")
    with ctx.autocast(), D.gathered_for_generate(gen_model):
        # the run's own sampler settings, never the checkpoint's generation_config (sampler.py)
        out = sample(gen_model, batch, SamplerSettings.from_config(cfg), use_cache=True, pad_token_id=ctx.pad_id)
    return [batching.trim_completion(row[prompt_len:].cpu(), ctx.eos_ids) for row in out]


def completion_logps(ctx: StepContext, model, batch: dict, with_entropy: bool = False):
    """log p(completion token) under `model` at the sampling temperature, (B, T)."""
    inputs = {k: v for k, v in batch.items() if k not in ("completion_mask", "prompt_len")}
    n_comp = batch["completion_mask"].shape[1]
    with ctx.autocast():
        logits = model(**inputs, logits_to_keep=n_comp + 1, use_cache=False).logits
    logits = logits[:, :-1, :] / ctx.cfg.temperature            # position t predicts token t+1
    # The sampler never emits vision placeholders (suppressed): the policy is the distribution
    # renormalised without them, so the log-probs must be too (sampler.py).
    blocked = placeholder_token_ids(D.unwrap(model))
    if blocked:
        logits = logits.clone()
        logits[..., blocked] = float("-inf")
    ids = batch["input_ids"][:, -n_comp:]
    logps = selective_log_softmax(logits, ids)
    entropy = entropy_from_logits(logits) if with_entropy else None
    return logps, entropy


@torch.no_grad()
def reference_logps(ctx: StepContext, encs: list[dict], comps: list[torch.Tensor], width: int) -> torch.Tensor:
    """The frozen reference's log-probs (B, width), in forwards of logprob_batch_size sequences."""
    size = ctx.cfg.logprob_batch_size
    out = torch.zeros((len(encs), width), device=ctx.info.device)
    for s in range(0, len(encs), size):
        sub = batching.collate(encs[s:s + size], comps[s:s + size], ctx.pad_id, ctx.info.device, ctx.eos_ids)
        if ctx.ref == "adapter-disabled":        # LoRA: the reference is the base model
            peft_model = D.unwrap(ctx.train_model)
            with peft_model.disable_adapter():
                lp = completion_logps(ctx, peft_model, sub)[0]
        else:
            lp = completion_logps(ctx, ctx.ref, sub)[0]
        out[s:s + lp.shape[0], :lp.shape[1]] = lp
    return out


def clip_and_step(cfg: GRPOConfig, model, optimizer, scheduler, ctx: StepContext) -> float:
    t = time.perf_counter()
    params = [p for p in model.parameters() if p.requires_grad]
    if cfg.max_grad_norm > 0:
        gn = float(torch.nn.utils.clip_grad_norm_(params, cfg.max_grad_norm))
    else:
        gn = float(torch.norm(torch.stack([p.grad.norm() for p in params if p.grad is not None])))
    optimizer.step()
    scheduler.step()
    optimizer.zero_grad(set_to_none=True)
    ctx.lap("optimizer", t)
    return gn


def save(run: RunDir, step: int, cfg, train_model, model, processor, optimizer, scheduler, info) -> None:
    full, optim_full = D.full_state_dict(train_model, optimizer, info, cfg.fsdp)
    checkpoint.save_checkpoint(
        run.checkpoint_dir(step), model=D.unwrap(model), processor=processor, optimizer=optimizer,
        scheduler=scheduler, state={"step": step, "base_model": cfg.model, "lora": cfg.lora},
        rank=info.rank, world=info.world, full_state=full, optim_state=optim_full,
        barrier=lambda: D.barrier(info))
    if info.is_main:
        run.prune_checkpoints(cfg.save_total_limit)


def completion_rows(puzzles, completions, texts, scores, adv, info, G, eos_ids) -> list[dict]:
    rows = []
    for i, (c, txt, s) in enumerate(zip(completions, texts, scores)):
        rows.append({"rank": info.rank, "puzzle_id": puzzles[i // G]["id"], "sample": i % G, "completion": txt,
                     "labels": s["labels"], "format": s["format"], "selection": s["selection"],
                     "order": s["order"], "exact": s["exact"], "reward": s["reward"],
                     "advantage": float(adv[i]), "length": int(batching.completion_mask_1d(c, eos_ids).sum())})
    return rows


def _comm(info: D.DistInfo) -> torch.device:
    return info.device if info.device.type == "cuda" else torch.device("cpu")


def _as_list(x) -> list:
    if x is None:
        return []
    return list(x) if isinstance(x, (list, tuple)) else [x]

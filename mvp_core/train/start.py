"""Everything the GRPO loop does before its first step: the run directory, where to start (fresh,
or the latest complete checkpoint), the model, reference, optimizer and schedule (restored on
resume), the sampling seed, and the held-out set. Kept apart from loop.py so the loop reads as
the loop."""
from __future__ import annotations

from dataclasses import dataclass

import torch

from mvp_core.train import checkpoint
from mvp_core.train import distributed as D
from mvp_core.train.config import GRPOConfig
from mvp_core.train.data import PuzzleSet
from mvp_core.train.heldout import HeldOut
from mvp_core.train.model_setup import load_model, make_optimizer, reference_model, resume_schedule, use_bf16
from mvp_core.train.rundir import RunDir
from mvp_core.train.runlog import RunLogger


def open_run(cfg: GRPOConfig, info: D.DistInfo, resume: bool) -> RunDir:
    run = RunDir(cfg.output_dir)
    if info.is_main:
        run.create(resume)
    D.barrier(info)
    return run


def start_point(run: RunDir, cfg: GRPOConfig, resume: bool, log: RunLogger) -> tuple[int, object]:
    """(step, checkpoint): step 0 and none for a fresh run, else the latest complete checkpoint."""
    if not resume:
        return 0, None
    latest = run.latest_checkpoint()
    if latest is None:
        log.info("resume: no checkpoint yet, starting from step 0")
        return 0, None
    start_step, ckpt = latest
    checkpoint.check_readable(ckpt)      # before mark_running touches status and metrics
    checkpoint.check_same_start(ckpt, cfg.model, cfg.lora)
    log.info(f"resuming from {ckpt} (step {start_step})")
    return start_step, ckpt


def mark_running(run: RunDir, cfg: GRPOConfig, data: PuzzleSet, info: D.DistInfo, start_step: int) -> None:
    if not info.is_main:
        return
    if start_step == 0:
        run.write_config(data.config_yaml(cfg, info.world))
    run.truncate_metrics(start_step)
    run.write_status(state="running", step=start_step, max_steps=cfg.max_steps)


@dataclass
class Trainer:
    """What every step works with, built once before the first step."""
    cfg: GRPOConfig
    info: D.DistInfo
    model: object           # the policy itself (unwrapped)
    train_model: object     # the policy as trained (DDP / FSDP wrapped under torchrun)
    ref: object             # frozen reference, "adapter-disabled" (LoRA) or None (beta = 0)
    processor: object
    optimizer: object
    scheduler: object
    eos_ids: frozenset
    pad_id: int
    bf16: bool


def build_trainer(cfg: GRPOConfig, info: D.DistInfo, ckpt, policy, start_step: int, log: RunLogger) -> Trainer:
    torch.manual_seed(cfg.seed)   # identical LoRA init on every rank
    model, processor = load_model(cfg, info.device, ckpt, policy)
    ref = reference_model(model, cfg)
    train_model = D.wrap_model(model, info, cfg.fsdp)
    optimizer, scheduler = make_optimizer(train_model, cfg)
    if ckpt is not None:
        _restore_optimizer(cfg, info, ckpt, train_model, optimizer, scheduler, start_step)
    _seed_sampling(cfg, info, ckpt, log)
    eos_ids, pad_id = _special_ids(model, processor)
    return Trainer(cfg, info, model, train_model, ref, processor, optimizer, scheduler, eos_ids, pad_id,
                   use_bf16(cfg, info.device))


def _restore_optimizer(cfg, info, ckpt, train_model, optimizer, scheduler, start_step: int) -> None:
    full = (lambda st: D.load_optimizer_full_state(train_model, optimizer, st)) if sharded(cfg, info) else None
    checkpoint.load_optimizer_state(ckpt, optimizer, scheduler, full)
    # The schedule follows this config (max_steps/warm-up/lr may differ from the saved run's).
    resume_schedule(optimizer, scheduler, cfg, start_step)


def _seed_sampling(cfg: GRPOConfig, info: D.DistInfo, ckpt, log: RunLogger) -> None:
    """Sampling differs across ranks; restored exactly on resume."""
    torch.manual_seed(cfg.seed * 1000 + info.rank)
    if ckpt is not None and not checkpoint.load_rng(ckpt, info.rank):
        log.info("checkpoint has no RNG state for this rank; sampling re-seeded")


def _special_ids(model, processor) -> tuple[frozenset, int]:
    tok = processor.tokenizer
    eos_ids = frozenset(i for i in {tok.eos_token_id, *_as_list(model.generation_config.eos_token_id)}
                        if i is not None)
    pad_id = tok.pad_token_id if tok.pad_token_id is not None else tok.eos_token_id
    return eos_ids, pad_id


def log_setup(t: Trainer, data: PuzzleSet, log: RunLogger) -> None:
    params = list(t.model.parameters())
    log.info(f"model {t.cfg.model}: {sum(p.numel() for p in params) / 1e6:.2f}M params, "
             f"{sum(p.numel() for p in params if p.requires_grad) / 1e6:.2f}M trainable, "
             f"{t.info.world} process(es) on {t.info.device.type}, bf16={t.bf16}, {len(data)} puzzles")


def heldout_for(cfg: GRPOConfig, info: D.DistInfo) -> HeldOut | None:
    """Held-out puzzles (videos not trained on), answered greedily every eval_steps (heldout.py).
    Rank 0 alone answers them; FSDP shards the weights across ranks, so there it is skipped."""
    return HeldOut.from_config(cfg) if not sharded(cfg, info) else None


def sharded(cfg: GRPOConfig, info: D.DistInfo) -> bool:
    return bool(cfg.fsdp and info.enabled)


def _as_list(x) -> list:
    if x is None:
        return []
    return list(x) if isinstance(x, (list, tuple)) else [x]

"""The one run lifecycle of both trainers (SFT and GRPO; docs/ARCHITECTURE.md, "Run directory"): start
(fresh or resumed from the latest complete checkpoint), the run directory, status, metrics log and
trackers, checkpoints, held-out evaluation, a clean stop on SIGTERM, the end state.

A trainer gives only its own step: `run(cfg, Recipe(kind, step, ...))`. `step(trainer, step, log)` takes
the run from `step` to `step + 1` (forward, backward and optimizer step) and returns its metrics;
everything around it is here, so `mvp sft` and `mvp train` write the same run directory the same way."""
from __future__ import annotations

import signal
from dataclasses import dataclass
from typing import Callable

import torch

from mvp_core.errors import UserError
from mvp_core.train import checkpoint, tracking
from mvp_core.train import distributed as D
from mvp_core.train.data import PuzzleSet
from mvp_core.train.heldout import HeldOut
from mvp_core.train.model_setup import EndTokens, end_ids, load_model, make_optimizer, resume_schedule, use_bf16
from mvp_core.train.rundir import RunDir
from mvp_core.train.runlog import RunLogger


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


@dataclass
class Trainer:
    """What every step works with, built once before the first step (SFT and GRPO alike)."""
    cfg: object
    info: D.DistInfo
    data: PuzzleSet
    model: object           # the policy itself (unwrapped)
    train_model: object     # the policy as trained (DDP / FSDP wrapped under torchrun)
    processor: object
    optimizer: object
    scheduler: object
    end: EndTokens          # the one end-of-sequence rule (model_setup.end_ids)
    bf16: bool
    ref: object = None      # GRPO's frozen reference, "adapter-disabled" (LoRA) or None

    @property
    def eos_ids(self) -> frozenset:
        return self.end.stop

    @property
    def pad_id(self) -> int:
        return self.end.pad


@dataclass
class Recipe:
    """What one trainer adds to the lifecycle."""
    kind: str                                              # "grpo" or "sft": config.yaml, status, checkpoints
    step: Callable[[Trainer, int, RunLogger], dict]        # one optimizer step -> its metrics
    line: Callable[[dict], str]                            # the step's log line
    describe: Callable[[Trainer], str]                     # the setup log line
    reference: Callable[[object, object], object] | None = None   # (model, cfg) -> frozen reference
    at_start: Callable[[Trainer, RunLogger], None] | None = None  # extra log lines once the model loads
    at_end: Callable[[Trainer, RunDir, RunLogger], None] | None = None   # after the last step of a finished run


def run(cfg, recipe: Recipe, resume: bool = False, on_step=None, policy=None) -> dict:
    """Run (or resume) a training run; returns {'state', 'step', 'metrics', 'run_dir'}. `on_step(step,
    metrics)` is called on every process after each step (tests use it to interrupt a run at a given
    step); `policy` is an in-memory (model, processor) to train instead of loading `cfg.model`."""
    info = D.init_distributed()
    try:
        with StopFlag() as stop:
            return _run(cfg, recipe, resume, on_step, info, stop, policy)
    finally:
        D.shutdown(info)


def _run(cfg, recipe: Recipe, resume: bool, on_step, info: D.DistInfo, stop: StopFlag, policy) -> dict:
    if not cfg.model and policy is None:
        raise UserError("model: no model path given (model=PATH)")
    tracking.check(cfg.report_to)           # a tracker that is not installed stops before anything is written
    data = PuzzleSet.open(cfg)
    heldout = heldout_for(cfg, info)         # a bad held-out file stops before the run directory is made
    run_dir = open_run(cfg, info, resume)
    log = RunLogger(run_dir, info)
    start_step, ckpt = start_point(run_dir, cfg, resume, log)
    t = build(cfg, info, data, ckpt, policy, start_step, log, recipe)
    # config.yaml and status only once the model loads: a bad model path leaves no run behind that
    # a corrected rerun would refuse as "already holds a run"
    mark_running(run_dir, cfg, data, info, start_step, recipe.kind)
    log.info(recipe.describe(t))
    if recipe.at_start is not None:
        recipe.at_start(t, log)
    if info.is_main:
        log.tracker = tracking.open_trackers(cfg, run_dir, data.config_yaml(cfg, info.world, recipe.kind), data.sha256,
                                             start_step)
    try:
        return _loop(t, recipe, run_dir, log, heldout, start_step, on_step, stop)
    finally:
        log.close()


def _loop(t: Trainer, recipe: Recipe, run_dir: RunDir, log: RunLogger, heldout, start_step: int, on_step,
          stop: StopFlag) -> dict:
    cfg, info = t.cfg, t.info
    step, metrics = start_step, {}
    while step < cfg.max_steps:
        metrics = recipe.step(t, step, log)
        step += 1
        if on_step is not None:     # before the stop check: a signal during the step stops at this step
            on_step(step, metrics)
        stopping = D.any_rank(stop.set, info)
        if heldout is not None and eval_due(cfg, step, stopping):
            evaluate(heldout, t, metrics)
        log.metrics(step, metrics, recipe.line(metrics))
        if checkpoint_due(cfg, step, stopping):
            save(run_dir, step, t, recipe.kind)
            log.info(f"checkpoint step {step}")
        if stopping:
            log.info(f"stopped by signal after step {step}; resume with --resume")
            return finish(run_dir, info, "stopped", step, metrics)
    if recipe.at_end is not None and step > start_step and info.is_main:
        recipe.at_end(t, run_dir, log)
    summary = finish(run_dir, info, "finished", step, metrics)
    log.info(f"finished at step {step}")
    return summary


# ---- start --------------------------------------------------------------------------------------

def open_run(cfg, info: D.DistInfo, resume: bool) -> RunDir:
    run_dir = RunDir(cfg.output_dir)
    if info.is_main:
        run_dir.create(resume)
    D.barrier(info)
    return run_dir


def start_point(run_dir: RunDir, cfg, resume: bool, log: RunLogger) -> tuple[int, object]:
    """(step, checkpoint): step 0 and none for a fresh run, else the latest complete checkpoint."""
    if not resume:
        return 0, None
    latest = run_dir.latest_checkpoint()
    if latest is None:
        log.info("resume: no checkpoint yet, starting from step 0")
        return 0, None
    start_step, ckpt = latest
    checkpoint.check_readable(ckpt)      # before mark_running touches status and metrics
    checkpoint.check_same_start(ckpt, cfg.model, cfg.lora)
    log.info(f"resuming from {ckpt} (step {start_step})")
    return start_step, ckpt


def build(cfg, info: D.DistInfo, data: PuzzleSet, ckpt, policy, start_step: int, log: RunLogger,
          recipe: Recipe) -> Trainer:
    """The model (from the checkpoint on resume), its reference, optimizer and schedule, RNG."""
    torch.manual_seed(cfg.seed)   # identical LoRA init on every rank
    model, processor = load_model(cfg, info.device, ckpt, policy)
    ref = recipe.reference(model, cfg) if recipe.reference is not None else None
    train_model = D.wrap_model(model, info, fsdp(cfg))
    optimizer, scheduler = make_optimizer(train_model, cfg)
    if ckpt is not None:
        full = (lambda st: D.load_optimizer_full_state(train_model, optimizer, st)) if sharded(cfg, info) else None
        checkpoint.load_optimizer_state(ckpt, optimizer, scheduler, full)
        # The schedule follows this config (max_steps/warm-up/lr may differ from the saved run's).
        resume_schedule(optimizer, scheduler, cfg, start_step)
    _seed_sampling(cfg, info, ckpt, log)
    return Trainer(cfg, info, data, model, train_model, processor, optimizer, scheduler, end_ids(model, processor),
                   use_bf16(cfg, info.device), ref)


def _seed_sampling(cfg, info: D.DistInfo, ckpt, log: RunLogger) -> None:
    """Sampling differs across ranks; restored exactly on resume."""
    torch.manual_seed(cfg.seed * 1000 + info.rank)
    if ckpt is not None and not checkpoint.load_rng(ckpt, info.rank):
        log.info("checkpoint has no RNG state for this rank; sampling re-seeded")


def mark_running(run_dir: RunDir, cfg, data: PuzzleSet, info: D.DistInfo, start_step: int, kind: str) -> None:
    if not info.is_main:
        return
    if start_step == 0:
        run_dir.write_config(data.config_yaml(cfg, info.world, kind))
    run_dir.truncate_metrics(start_step)
    run_dir.write_status(state="running", step=start_step, max_steps=cfg.max_steps, kind=kind)


def heldout_for(cfg, info: D.DistInfo) -> HeldOut | None:
    """Held-out puzzles (videos not trained on), answered greedily every eval_steps (heldout.py).
    Rank 0 alone answers them; FSDP shards the weights across ranks, so there it is skipped."""
    return HeldOut.from_config(cfg) if not sharded(cfg, info) else None


def fsdp(cfg) -> bool:
    return bool(getattr(cfg, "fsdp", False))      # SFT has no FSDP setting: DDP under torchrun


def sharded(cfg, info: D.DistInfo) -> bool:
    return fsdp(cfg) and info.enabled


# ---- after each step ----------------------------------------------------------------------------

def eval_due(cfg, step: int, stopping: bool) -> bool:
    """Held-out answers after this step: every eval_steps, at the end, and on a stop."""
    every = cfg.eval_steps
    return step == cfg.max_steps or stopping or (every > 0 and step % every == 0)


def checkpoint_due(cfg, step: int, stopping: bool) -> bool:
    """A checkpoint after this step: every save_steps, at the end, and on a stop."""
    return step % cfg.save_steps == 0 or step == cfg.max_steps or stopping


def evaluate(heldout: HeldOut, t: Trainer, metrics: dict) -> None:
    if t.info.is_main:
        metrics.update(heldout.evaluate(D.unwrap(t.train_model), t.processor))
    D.barrier(t.info)


def save(run_dir: RunDir, step: int, t: Trainer, kind: str) -> None:
    cfg, info = t.cfg, t.info
    full, optim_full = D.full_state_dict(t.train_model, t.optimizer, info, fsdp(cfg))
    checkpoint.save_checkpoint(
        run_dir.checkpoint_dir(step), model=D.unwrap(t.model), processor=t.processor, optimizer=t.optimizer,
        scheduler=t.scheduler, state={"step": step, "base_model": cfg.model, "lora": cfg.lora, "kind": kind},
        rank=info.rank, world=info.world, full_state=full, optim_state=optim_full,
        barrier=lambda: D.barrier(info))
    if info.is_main:
        run_dir.prune_checkpoints(cfg.save_total_limit)


def finish(run_dir: RunDir, info: D.DistInfo, state: str, step: int, metrics: dict) -> dict:
    """The end state in status.json (rank 0) and the run's summary."""
    if info.is_main:
        run_dir.write_status(state=state, step=step)
    return {"state": state, "step": step, "metrics": metrics, "run_dir": str(run_dir.path)}

"""The supervised warm start (`mvp sft`): teach the answer format and the right labels before
GRPO, with the loss on the completion tokens only.

Written beside the GRPO loop rather than on TRL's SFTTrainer: TRL is not installed here, its
SFTTrainer collates multi-image Qwen2.5-VL rows through a processor-specific data collator we
would still have to write (our prompts interleave N frames and m + l options, decoded by us, with
`mm_token_type_ids`), and it writes the Hugging Face Trainer's output layout, not the run
directory of docs/grpo.md. Reusing this package's pieces instead gives SFT the same run directory,
checkpoints, exact resume, status file, prompt encoding and held-out evaluation as GRPO.

One optimizer step: the step's puzzles (a pure function of seed and step, as in GRPO), the
target completion of each, one forward per micro-batch, mean token cross-entropy over all
completion tokens of the step, clip, AdamW. Under `torchrun --nproc_per_node N` each rank takes
1/N of the step's puzzles (as GRPO's ranks do: distributed.py), DDP sums the gradients and the
loss is normalised by the tokens of all ranks, so N ranks take the step one process would take
with N x per_device_train_batch_size puzzles; rank 0 writes the run directory. (On the 2-core CPU
machine two ranks are the fastest way to run the learning proof's SFT: docs/BENCHMARKS.md.)"""
from __future__ import annotations

import time

import torch

from mvp_core.reward import render_answer
from mvp_core.train import batching, checkpoint
from mvp_core.train import distributed as D
from mvp_core.train.data import PuzzleSet
from mvp_core.train.heldout import HeldOut
from mvp_core.train.loop import StopFlag, checkpoint_due, eval_due, finish
from mvp_core.train.loss import selective_log_softmax
from mvp_core.train.model_setup import load_model, make_optimizer, optimizer_step, resume_schedule, use_bf16
from mvp_core.train.rundir import RunDir
from mvp_core.train.runlog import logged_norm
from mvp_core.train.sft_config import SFTConfig

SFT_METRIC_FIELDS = ("step", "loss", "token_accuracy", "grad_norm", "lr", "step_s", "samples_per_s",
                     "tokens_per_s", "completion_length", "epoch", "time")


def target_text(record: dict, style: str = "empty") -> str:
    """The completion the model learns for a puzzle: the answer format with the right labels and
    an empty think block, a one-sentence reasoning ("short"), each frame's time ("times"), or the
    context times then a scan of the options per masked frame ("scan")."""
    labels = ", ".join(record["answer"])
    if style == "empty":
        return render_answer(record["answer"])
    if style == "scan":
        return render_answer(record["answer"], _scan_think(record))
    if style == "times":
        # When each frame was taken (whole seconds), written so that every step is one small
        # skill a model can learn from scratch: the context frames' times ("1:5 4:8", read from
        # each image), the masked frames' times ("gap:6 7", from their neighbours), each option's
        # time before its label ("7:A", read from each image), then each gap time with the label
        # of the option of that time ("6:C 7:A": a look-up of an earlier "6:"), copied as the answer.
        s, m = record["mask"]["start"], record["mask"]["length"]
        ctx = [f"{i + 1}:{int(f['t'])}" for i, f in enumerate(record["frames"]) if not s <= i < s + m]
        gap = [int(f["t"]) for f in record["frames"][s:s + m]]
        opts = [f"{int(o['t'])}:{o['label']}" for o in record["options"]]
        match = [f"{t}:{label}" for t, label in zip(gap, record["answer"])]
        return render_answer(record["answer"],
                             f"{' '.join(ctx)} gap:{' '.join(map(str, gap))} | {' '.join(opts)} | {' '.join(match)}")
    s, m = record["mask"]["start"], record["mask"]["length"]
    n = len(record["frames"])
    where = f"between frame {s} and frame {s + m + 1}" if s + m < n else f"after frame {s}"
    return render_answer(record["answer"], f"The gap is {where}; in order: {labels}.")


def _scan_think(record: dict) -> str:
    """"1:5 3:7 | 6: 9:A 6:B": the context frames' times, then for each masked frame its time
    (from its neighbours) and the options' times in label order up to the one of that time. Unlike
    "times", no step searches the text: whether to stop compares the option just read with the
    masked frame's time a few tokens back, and the answer copies the last label of each scan. (On
    the CI-sized proof, 200 steps learn the times; the stop is still often missed on held-out
    videos: docs/BENCHMARKS.md, "Learning proof".)"""
    s, m = record["mask"]["start"], record["mask"]["length"]
    ctx = [f"{i + 1}:{int(f['t'])}" for i, f in enumerate(record["frames"]) if not s <= i < s + m]
    opts = [(int(o["t"]), o["label"]) for o in record["options"]]
    scans = []
    for f, label in zip(record["frames"][s:s + m], record["answer"]):
        stop = next(i for i, (_, lab) in enumerate(opts) if lab == label)
        scans.append(f"{int(f['t'])}: " + " ".join(f"{t}:{lab}" for t, lab in opts[:stop + 1]))
    return " ".join(ctx) + " | " + " | ".join(scans)


def train_sft(cfg: SFTConfig, resume: bool = False, on_step=None) -> dict:
    """Run (or resume) an SFT run; returns {'state', 'step', 'metrics', 'run_dir'}."""
    info = D.init_distributed()
    try:
        with StopFlag() as stop:
            return _train(cfg, resume, on_step, stop, info)
    finally:
        D.shutdown(info)


def _start(run: RunDir, cfg: SFTConfig, data: PuzzleSet, resume: bool, log, info: D.DistInfo):
    start_step, ckpt = 0, None
    if info.is_main:
        run.create(resume)
    D.barrier(info)
    if resume:
        latest = run.latest_checkpoint()
        if latest is not None:
            start_step, ckpt = latest
            checkpoint.check_readable(ckpt)      # before the status and metrics are touched
            checkpoint.check_same_start(ckpt, cfg.model, cfg.lora)
            log(f"resuming from {ckpt} (step {start_step})")
    return start_step, ckpt


def _mark_running(run: RunDir, cfg: SFTConfig, data: PuzzleSet, start_step: int, info: D.DistInfo) -> None:
    """config.yaml, metrics and status: written once the model and optimizer load, so a bad model
    path leaves no run behind that a corrected rerun would refuse."""
    if not info.is_main:
        return
    if start_step == 0:
        run.write_config(data.config_yaml(cfg, info.world).replace("run_info:", "run_info:\n  kind: sft", 1))
    run.truncate_metrics(start_step)
    run.write_status(state="running", step=start_step, max_steps=cfg.max_steps, kind="sft")


def _train(cfg: SFTConfig, resume: bool, on_step, stop: StopFlag, info: D.DistInfo) -> dict:
    if not cfg.model:
        from mvp_core.errors import UserError
        raise UserError("model: no model path given (model=PATH)")
    data = PuzzleSet.open(cfg)
    heldout = HeldOut.from_config(cfg)      # answered by rank 0 alone
    run = RunDir(cfg.output_dir)

    def log(msg: str) -> None:
        if info.is_main:
            print(msg, flush=True)
            run.log(msg)

    start_step, model, train_model, processor, optimizer, scheduler, ctx = _setup(run, cfg, data, resume, log, info)
    log(f"sft {cfg.model}: {sum(p.numel() for p in model.parameters() if p.requires_grad) / 1e6:.2f}M "
        f"trainable, {info.world} process(es), {len(data)} puzzles, {len(heldout.records) if heldout else 0} held-out")

    step, metrics = start_step, {}
    while step < cfg.max_steps:
        t0 = time.perf_counter()
        records = data.puzzles_for_step(step, info.rank, info.world)
        lr = optimizer.param_groups[0]["lr"]
        out = sft_step(cfg, train_model, processor, data, records, ctx, info)
        gn = optimizer_step(train_model, cfg.max_grad_norm, optimizer, scheduler)
        step += 1
        metrics = _step_metrics(step, out, gn, lr, time.perf_counter() - t0, data, info.world)
        stopping = D.any_rank(stop.set, info)     # every rank stops at the same step
        if info.is_main and heldout and eval_due(cfg, step, stopping):
            metrics.update(heldout.evaluate(model, processor))
        if info.is_main:
            run.append_metrics(metrics)
            run.write_status(state="running", step=step)
        log(_step_line(metrics))
        if on_step is not None:
            on_step(step, metrics)
        if checkpoint_due(cfg, step, stopping):
            _save(run, step, cfg, model, processor, optimizer, scheduler, info)
            log(f"checkpoint step {step}")
        if stopping:
            log(f"stopped by signal after step {step}; resume with --resume")
            return finish(run, info, "stopped", step, metrics)
    if cfg.lora and step > start_step and info.is_main:
        _write_merged(run, model, processor, log)
    summary = finish(run, info, "finished", step, metrics)
    log(f"finished at step {step}")
    return summary


def _setup(run: RunDir, cfg: SFTConfig, data: PuzzleSet, resume: bool, log, info: D.DistInfo):
    """(start step, model, the model as trained (DDP-wrapped under torchrun), processor,
    optimizer, scheduler, batch context), restored from the latest checkpoint when resuming."""
    start_step, ckpt = _start(run, cfg, data, resume, log, info)
    device = info.device
    torch.manual_seed(cfg.seed)               # the same initial LoRA weights on every rank
    model, processor = load_model(cfg, device, ckpt)
    train_model = D.wrap_model(model, info, fsdp=False)
    optimizer, scheduler = make_optimizer(train_model, cfg)
    if ckpt is not None:
        checkpoint.load_optimizer_state(ckpt, optimizer, scheduler)
        resume_schedule(optimizer, scheduler, cfg, start_step)
        checkpoint.load_rng(ckpt, info.rank)
    _mark_running(run, cfg, data, start_step, info)
    tok = processor.tokenizer
    eos = tok.convert_tokens_to_ids("<|im_end|>") if "<|im_end|>" in tok.get_vocab() else tok.eos_token_id
    ctx = {"pad": tok.pad_token_id if tok.pad_token_id is not None else eos, "eos": eos,
           "bf16": use_bf16(cfg, device), "device": device}
    return start_step, model, train_model, processor, optimizer, scheduler, ctx


def _step_metrics(step: int, out: dict, grad_norm: float, lr: float, dt: float, data, world: int) -> dict:
    n = data.puzzles_per_step(world)             # the step's puzzles on all ranks
    return {"step": step, "loss": out["loss"], "token_accuracy": out["accuracy"],
            "grad_norm": logged_norm(grad_norm),
            "lr": float(lr), "step_s": dt, "samples_per_s": n / dt,
            "tokens_per_s": out["tokens"] / dt, "completion_length": out["tokens"] / n,
            "epoch": data.epoch_of(step, world), "time": time.time()}


def _step_line(m: dict) -> str:
    line = f"step {m['step']}: loss {m['loss']:.4f} acc {m['token_accuracy']:.3f} lr {m['lr']:.2e} {m['step_s']:.2f}s"
    if "eval_reward" in m:
        line += f" | eval reward {m['eval_reward']:.3f} exact {m['eval_exact']:.3f}"
    return line


def _targets(cfg: SFTConfig, processor, records: list[dict], eos: int) -> list[torch.Tensor]:
    tok = processor.tokenizer
    return [torch.tensor(tok(target_text(r, cfg.target), add_special_tokens=False)["input_ids"] + [eos])
            for r in records]


def sft_step(cfg: SFTConfig, model, processor, data: PuzzleSet, records: list[dict], ctx: dict,
             info: D.DistInfo = D.DistInfo()) -> dict:
    """Forward + backward over this rank's micro-batches; gradients accumulate, normalised by the
    step's completion tokens on all ranks (every token weighs the same, whatever its micro-batch or
    rank). DDP averages the ranks' gradients, so each rank's loss is scaled by the world size.
    Returns the step's loss, token accuracy and tokens over all ranks."""
    from contextlib import nullcontext
    encs = [data.encode(r, processor) for r in records]
    comps = _targets(cfg, processor, records, ctx["eos"])
    n_local = sum(int(c.numel()) for c in comps)
    n_tokens = int(D.all_sum(n_local, info))
    mb = cfg.per_device_train_batch_size
    model.train()
    loss_sum, correct = 0.0, 0
    starts = range(0, len(records), mb)
    for s in starts:
        batch = batching.collate(encs[s:s + mb], comps[s:s + mb], ctx["pad"], ctx["device"], frozenset({ctx["eos"]}))
        mask = batch.pop("completion_mask").float()
        batch.pop("prompt_len")
        width = mask.shape[1]
        amp = torch.autocast(device_type=ctx["device"].type, dtype=torch.bfloat16) if ctx["bf16"] else nullcontext()
        with D.grad_sync(model, last=s == starts[-1]):        # the forward too: DDP marks it for the all-reduce
            with amp:
                logits = model(**batch, logits_to_keep=width + 1, use_cache=False).logits[:, :-1, :]
            ids = batch["input_ids"][:, -width:]
            logps = selective_log_softmax(logits, ids)
            loss = -(logps * mask).sum() / n_tokens
            (loss * info.world).backward()
        loss_sum += float(loss.detach())
        with torch.no_grad():
            correct += int(((logits.argmax(-1) == ids).float() * mask).sum())
    return {"loss": D.all_sum(loss_sum, info), "accuracy": D.all_sum(correct, info) / max(n_tokens, 1),
            "tokens": n_tokens}


def _save(run: RunDir, step: int, cfg: SFTConfig, model, processor, optimizer, scheduler, info: D.DistInfo) -> None:
    checkpoint.save_checkpoint(run.checkpoint_dir(step), model=model, processor=processor, optimizer=optimizer,
                               scheduler=scheduler, state={"step": step, "base_model": cfg.model, "lora": cfg.lora,
                                                           "kind": "sft"}, rank=info.rank, world=info.world,
                               barrier=lambda: D.barrier(info))
    if info.is_main:
        run.prune_checkpoints(cfg.save_total_limit)


def _write_merged(run: RunDir, model, processor, log) -> None:
    """LoRA: the adapter merged into full weights in RUN/merged/, a plain model directory a GRPO
    run (model=RUN/merged) or `mvp eval --model` can start from."""
    import copy
    merged = copy.deepcopy(model).merge_and_unload()
    out = run.path / "merged"
    merged.save_pretrained(out)
    processor.save_pretrained(out)
    log(f"merged LoRA weights written to {out}")

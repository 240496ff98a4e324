"""The supervised warm start (`mvp sft`): teach the answer format and the right labels before
GRPO, with the loss on the completion tokens only.

Written beside the GRPO loop rather than on TRL's SFTTrainer: TRL is not installed here, its
SFTTrainer collates multi-image Qwen2.5-VL rows through a processor-specific data collator we
would still have to write (our prompts interleave N frames and m + l options, decoded by us, with
`mm_token_type_ids`), and it writes the Hugging Face Trainer's output layout, not the run
directory of docs/grpo.md. Running on the lifecycle GRPO runs on (lifecycle.py) gives SFT the same run
directory, checkpoints, exact resume, status file, trackers, prompt encoding and held-out evaluation;
this file holds only the SFT step and its target.

One optimizer step: the step's puzzles (a pure function of seed and step, as in GRPO), the
target completion of each, one forward per micro-batch, mean token cross-entropy over all
completion tokens of the step, clip, AdamW. Under `torchrun --nproc_per_node N` each rank takes
1/N of the step's puzzles (as GRPO's ranks do: distributed.py), DDP sums the gradients and the
loss is normalised by the tokens of all ranks, so N ranks take the step one process would take
with N x per_device_train_batch_size puzzles; rank 0 writes the run directory. (On the 2-core CPU
machine two ranks are the fastest way to run the learning proof's SFT: docs/BENCHMARKS.md.)"""
from __future__ import annotations

import time
from contextlib import nullcontext

import torch

from mvp_core.reward import render_answer
from mvp_core.train import batching, lifecycle
from mvp_core.train import distributed as D
from mvp_core.train.data import PuzzleSet
from mvp_core.train.lifecycle import Trainer
from mvp_core.train.loss import selective_log_softmax
from mvp_core.train.model_setup import EndTokens, optimizer_step
from mvp_core.train.rundir import RunDir
from mvp_core.train.runlog import logged_norm
from mvp_core.train.sft_config import SFTConfig


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
    """Run (or resume) an SFT run; returns {'state', 'step', 'metrics', 'run_dir'}. The run around
    the step is the lifecycle GRPO runs on too (lifecycle.py)."""
    recipe = lifecycle.Recipe(kind="sft", step=train_step, line=step_line, describe=describe,
                              at_end=write_merged if cfg.lora else None)
    return lifecycle.run(cfg, recipe, resume=resume, on_step=on_step)


def describe(t: Trainer) -> str:
    return (f"sft {t.cfg.model}: {sum(p.numel() for p in t.model.parameters() if p.requires_grad) / 1e6:.2f}M "
            f"trainable, {t.info.world} process(es), {len(t.data)} puzzles")


def train_step(t: Trainer, step: int, log) -> dict:
    """The optimizer step that takes the run from `step` to `step + 1`; returns its metrics."""
    t0 = time.perf_counter()
    records = t.data.puzzles_for_step(step, t.info.rank, t.info.world)
    lr = t.optimizer.param_groups[0]["lr"]
    out = sft_step(t.cfg, t.train_model, t.processor, t.data, records, t.end, t.bf16, t.info)
    gn = optimizer_step(t.train_model, t.cfg.max_grad_norm, t.optimizer, t.scheduler)
    return step_metrics(step + 1, out, gn, lr, time.perf_counter() - t0, t.data, t.info.world)


def step_metrics(step: int, out: dict, grad_norm: float, lr: float, dt: float, data, world: int) -> dict:
    n = data.puzzles_per_step(world)             # the step's puzzles on all ranks
    return {"step": step, "loss": out["loss"], "token_accuracy": out["accuracy"],
            "grad_norm": logged_norm(grad_norm),
            "lr": float(lr), "step_s": dt, "samples_per_s": n / dt,
            "tokens_per_s": out["tokens"] / dt, "completion_length": out["tokens"] / n,
            "epoch": data.epoch_of(step, world), "time": time.time()}


def step_line(m: dict) -> str:
    line = f"step {m['step']}: loss {m['loss']:.4f} acc {m['token_accuracy']:.3f} lr {m['lr']:.2e} {m['step_s']:.2f}s"
    if "eval_reward" in m:
        line += f" | eval reward {m['eval_reward']:.3f} exact {m['eval_exact']:.3f}"
    return line


def targets(cfg: SFTConfig, processor, records: list[dict], end: EndTokens) -> list[torch.Tensor]:
    """Each record's target completion as ids, ended by the end token GRPO's sampler stops on."""
    tok = processor.tokenizer
    return [torch.tensor(tok(target_text(r, cfg.target), add_special_tokens=False)["input_ids"] + [end.target])
            for r in records]


def sft_step(cfg: SFTConfig, model, processor, data: PuzzleSet, records: list[dict], end: EndTokens,
             bf16: bool = False, info: D.DistInfo = D.DistInfo()) -> dict:
    """Forward + backward over this rank's micro-batches; gradients accumulate, normalised by the
    step's completion tokens on all ranks (every token weighs the same, whatever its micro-batch or
    rank). DDP averages the ranks' gradients, so each rank's loss is scaled by the world size.
    Returns the step's loss, token accuracy and tokens over all ranks."""
    encs = [data.encode(r, processor) for r in records]
    comps = targets(cfg, processor, records, end)
    n_local = sum(int(c.numel()) for c in comps)
    n_tokens = int(D.all_sum(n_local, info))
    mb = cfg.per_device_train_batch_size
    model.train()
    loss_sum, correct = 0.0, 0
    starts = range(0, len(records), mb)
    for s in starts:
        batch = batching.collate(encs[s:s + mb], comps[s:s + mb], end.pad, info.device, frozenset({end.target}))
        mask = batch.pop("completion_mask").float()
        batch.pop("prompt_len")
        width = mask.shape[1]
        amp = torch.autocast(device_type=info.device.type, dtype=torch.bfloat16) if bf16 else nullcontext()
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


def write_merged(t: Trainer, run: RunDir, log) -> None:
    """LoRA: the adapter merged into full weights in RUN/merged/, a plain model directory a GRPO
    run (model=RUN/merged) or `mvp eval --model` can start from."""
    import copy
    merged = copy.deepcopy(t.model).merge_and_unload()
    out = run.path / "merged"
    merged.save_pretrained(out)
    t.processor.save_pretrained(out)
    log.info(f"merged LoRA weights written to {out}")

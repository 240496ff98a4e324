"""Checkpoints that resume exactly: weights, optimizer and scheduler state, every process's RNG.

A checkpoint directory is also a loadable model (`save_pretrained` + the processor), so `mvp eval
--model RUN/checkpoints/step_000050` works on it; for a LoRA run it holds the adapter (peft
format) and `base_model` in trainer_state.json names the weights it applies to.

It is written into `step_N.tmp/` and renamed when complete; `trainer_state.json` is written last,
so a run killed mid-save leaves no checkpoint that looks complete."""
from __future__ import annotations

import json
import os
import pickle
import random
import shutil
from pathlib import Path

import numpy as np
import torch

from mvp_core.errors import UserError


# What a checkpoint's state files may hold besides tensors and plain values: numpy's RNG state array.
# Everything is loaded with weights_only=True (no code in a file runs on resume; docs/security.md).
_NUMPY_STATE_TYPES = [np._core.multiarray._reconstruct, np.ndarray, np.dtype, type(np.dtype(np.uint32))]


def _load_state(path: Path, what: str):
    """torch.load restricted to tensors, plain values and the allowlist above; a file that needs more
    (crafted, or not written by this trainer) is refused with one line, nothing of it run."""
    try:
        with torch.serialization.safe_globals(_NUMPY_STATE_TYPES):
            return torch.load(path, map_location="cpu", weights_only=True)
    except pickle.UnpicklingError as e:
        first = str(e).strip().splitlines()[0] if str(e).strip() else "unpickling refused"
        raise UserError(f"checkpoint file {path} ({what}) holds more than tensors and plain values; refusing to "
                        f"load it ({first[:160]})") from None


def rng_state() -> dict:
    state = {"torch": torch.get_rng_state(), "python": random.getstate(), "numpy": np.random.get_state()}
    if torch.cuda.is_available():
        state["cuda"] = torch.cuda.get_rng_state_all()
    return state


def set_rng_state(state: dict) -> None:
    torch.set_rng_state(state["torch"])
    random.setstate(state["python"])
    np.random.set_state(state["numpy"])
    if "cuda" in state and torch.cuda.is_available():
        torch.cuda.set_rng_state_all(state["cuda"])


def save_checkpoint(ckpt_dir: Path, *, model, processor, optimizer, scheduler, state: dict,
                    rank: int, world: int, full_state: dict | None = None, optim_state: dict | None = None,
                    barrier=lambda: None) -> None:
    """Every rank calls this. Rank 0 writes weights and optimizer state (`full_state` /
    `optim_state` when FSDP gathered them), every rank writes its RNG state; then rank 0 writes
    trainer_state.json and renames the directory into place."""
    tmp = ckpt_dir.with_name(ckpt_dir.name + ".tmp")
    if rank == 0:
        shutil.rmtree(tmp, ignore_errors=True)
        tmp.mkdir(parents=True)
    barrier()
    if rank == 0:
        if full_state is not None:
            model.save_pretrained(tmp, state_dict=full_state)
        else:
            model.save_pretrained(tmp)
        if processor is not None:
            processor.save_pretrained(tmp)
        torch.save(optim_state if optim_state is not None else optimizer.state_dict(), tmp / "optimizer.pt")
        torch.save(scheduler.state_dict(), tmp / "scheduler.pt")
    torch.save(rng_state(), tmp / f"rng_rank{rank}.pt")
    barrier()
    if rank == 0:
        (tmp / "trainer_state.json").write_text(json.dumps({**state, "world_size": world}, indent=1))
        shutil.rmtree(ckpt_dir, ignore_errors=True)
        os.replace(tmp, ckpt_dir)
    barrier()


def check_readable(ckpt_dir: Path) -> None:
    """Refuse a checkpoint whose files are torn (a disk filled up, a copy cut short) before a resume
    writes anything into the run directory: weights by their safetensors header, which must cover the
    file exactly; torch files by their zip directory, at the end of the file; JSON by parsing it.
    Cheap (no tensor is read), so the good checkpoints before it stay the way to go on."""
    import zipfile

    from safetensors import SafetensorError, safe_open
    ckpt_dir = Path(ckpt_dir)
    for f in sorted(ckpt_dir.iterdir()):
        try:
            if f.suffix == ".safetensors":
                with safe_open(str(f), framework="pt"):
                    pass
                continue
            if f.suffix == ".pt" and not zipfile.is_zipfile(f):
                why = "not a complete torch file"
            elif f.suffix == ".json" and not isinstance(json.loads(f.read_text(encoding="utf-8")), dict):
                why = "not a JSON object"
            else:
                continue
        except (SafetensorError, OSError, ValueError, RecursionError) as e:
            why = str(e).splitlines()[0] if str(e) else type(e).__name__
        raise UserError(f"checkpoint {ckpt_dir}: {f.name} is damaged ({why}); move that checkpoint directory "
                        f"away to resume from the one before it")


def check_same_start(ckpt_dir: Path, model: str, lora: bool) -> None:
    """Refuse to resume a run under a config that names another starting model (or switches LoRA):
    the resumed weights are the checkpoint's, so the new name would be trained on in name only."""
    state = read_trainer_state(ckpt_dir)
    was = state.get("base_model")
    if was and model and Path(str(was)).resolve() != Path(str(model)).resolve():
        raise UserError(f"checkpoint {ckpt_dir} continues a run started from model {was}, not {model}; "
                        f"resume with model={was}, or give a new output_dir to start from {model}")
    if "lora" in state and bool(state["lora"]) != bool(lora):
        raise UserError(f"checkpoint {ckpt_dir} was trained with lora={str(bool(state['lora'])).lower()}; "
                        f"resume with the same, or give a new output_dir")


def read_trainer_state(ckpt_dir: Path) -> dict:
    return json.loads((Path(ckpt_dir) / "trainer_state.json").read_text())


def load_optimizer_state(ckpt_dir: Path, optimizer, scheduler, load_full=None) -> None:
    """`load_full(state)` loads a full FQN-keyed state saved under FSDP (distributed.py)."""
    try:
        state = _load_state(Path(ckpt_dir) / "optimizer.pt", "optimizer state")
        if load_full is not None:
            load_full(state)
        else:
            optimizer.load_state_dict(state)
        scheduler.load_state_dict(_load_state(Path(ckpt_dir) / "scheduler.pt", "scheduler state"))
    except (OSError, RuntimeError, ValueError, KeyError, EOFError) as e:   # missing, torn, or another model's
        raise UserError(f"checkpoint {ckpt_dir}: cannot restore the optimizer "
                        f"({str(e).splitlines()[0] if str(e) else type(e).__name__})") from None


def load_rng(ckpt_dir: Path, rank: int) -> bool:
    """Restore this rank's RNG; False when the checkpoint came from a run with fewer processes
    (then sampling continues from a re-seeded RNG: same data order, different samples)."""
    f = Path(ckpt_dir) / f"rng_rank{rank}.pt"
    if not f.is_file():
        return False
    set_rng_state(_load_state(f, "RNG state"))
    return True

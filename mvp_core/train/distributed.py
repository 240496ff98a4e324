"""One process or many (`torchrun --nproc_per_node N mvp train ...`).

Each process takes a share of the step's puzzles (whole groups), samples and scores them; the
rewards of every process are gathered before advantages are computed, so group and batch
normalisation see the same numbers as a single process would. Gradients are averaged by DDP
(gloo on the CPU, nccl on GPUs), or parameters are sharded with FSDP2 (`fsdp: true`). Rank 0
alone writes the run directory."""
from __future__ import annotations

import os
from dataclasses import dataclass

import torch
import torch.distributed as dist


@dataclass
class DistInfo:
    rank: int = 0
    world: int = 1
    local_rank: int = 0
    device: torch.device = torch.device("cpu")

    @property
    def is_main(self) -> bool:
        return self.rank == 0

    @property
    def enabled(self) -> bool:
        return self.world > 1


def init_distributed() -> DistInfo:
    """Join the torchrun group when WORLD_SIZE > 1; pick this process's device."""
    world = int(os.environ.get("WORLD_SIZE", "1"))
    rank = int(os.environ.get("RANK", "0"))
    local_rank = int(os.environ.get("LOCAL_RANK", "0"))
    use_cuda = torch.cuda.is_available() and os.environ.get("MVP_FORCE_CPU", "") != "1"
    device = torch.device(f"cuda:{local_rank}") if use_cuda else torch.device("cpu")
    if use_cuda:
        torch.cuda.set_device(device)
    if world > 1 and not dist.is_initialized():
        dist.init_process_group(backend="nccl" if use_cuda else "gloo")
    return DistInfo(rank, world, local_rank, device)


def shutdown(info: DistInfo) -> None:
    if info.enabled and dist.is_initialized():
        dist.destroy_process_group()


def barrier(info: DistInfo) -> None:
    if info.enabled:
        dist.barrier()


def all_gather_cat(t: torch.Tensor, info: DistInfo) -> torch.Tensor:
    """Concatenate equal-shaped tensors from every rank, in rank order."""
    if not info.enabled:
        return t
    parts = [torch.empty_like(t) for _ in range(info.world)]
    dist.all_gather(parts, t.contiguous())
    return torch.cat(parts)


def all_sum(x: float, info: DistInfo) -> float:
    if not info.enabled:
        return float(x)
    t = torch.tensor([float(x)], dtype=torch.float64, device=_comm_device(info))
    dist.all_reduce(t)
    return float(t.item())


def any_rank(flag: bool, info: DistInfo) -> bool:
    """True if the flag is set on any rank (used so every rank stops at the same step)."""
    if not info.enabled:
        return bool(flag)
    t = torch.tensor([1.0 if flag else 0.0], device=_comm_device(info))
    dist.all_reduce(t, op=dist.ReduceOp.MAX)
    return bool(t.item() > 0)


def gather_objects(obj, info: DistInfo) -> list:
    """Every rank's object, on every rank (small things: completion rows, metric sums)."""
    if not info.enabled:
        return [obj]
    out = [None] * info.world
    dist.all_gather_object(out, obj)
    return out


def broadcast_object(obj, info: DistInfo):
    if not info.enabled:
        return obj
    box = [obj]
    dist.broadcast_object_list(box, src=0)
    return box[0]


def _comm_device(info: DistInfo) -> torch.device:
    return info.device if dist.get_backend() == "nccl" else torch.device("cpu")


def grad_sync(train_model, last: bool):
    """Around a micro-batch's forward and backward: DDP all-reduces gradients on the last
    micro-batch of a step only (a no-op for one process and for FSDP)."""
    from contextlib import nullcontext
    if last or not hasattr(train_model, "no_sync"):
        return nullcontext()
    return train_model.no_sync()


def wrap_model(model, info: DistInfo, fsdp: bool):
    """DDP (replicas) or FSDP2 (shards) around the policy; the unwrapped model stays reachable
    through `unwrap()` for generation and saving."""
    if not info.enabled:
        return model
    if fsdp:
        from torch.distributed.fsdp import fully_shard
        # Units: every decoder layer, the vision tower (generate reaches it outside the root's
        # forward, so it must unshard itself), then the root for what is left.
        for unit in _decoder_layers(model) + _visual(model):
            fully_shard(unit)
        fully_shard(model)
        # Initialise from the root now: generate() may call a child unit first, which would
        # otherwise make that child a root of its own.
        model._get_fsdp_state()._lazy_init()
        return model
    from torch.nn.parallel import DistributedDataParallel as DDP
    ids = [info.device.index] if info.device.type == "cuda" else None
    # broadcast_buffers off: the policy's buffers (rotary frequencies) are equal on every rank and
    # never change, and DDP would otherwise broadcast them at every forward (two per shared-prompt
    # micro-batch), each a point where the ranks wait for each other.
    return DDP(model, device_ids=ids, broadcast_buffers=False)


def gathered_for_generate(model):
    """Context for `generate` under FSDP: all parameters unsharded for the whole decode (one
    all-gather, not one per token), resharded afterwards. A no-op for DDP / one process."""
    from contextlib import contextmanager

    @contextmanager
    def ctx():
        fsdp = hasattr(model, "unshard") and hasattr(model, "reshard")
        units = [m for m in model.modules() if hasattr(m, "unshard") and hasattr(m, "reshard")] if fsdp else []
        for m in units:
            m.unshard()
        try:
            yield
        finally:
            for m in units:
                m.reshard()
    return ctx()


def unwrap(model):
    return model.module if hasattr(model, "module") and isinstance(
        model, torch.nn.parallel.DistributedDataParallel) else model


def _visual(model) -> list:
    return [m for name, m in model.named_modules() if name.endswith("visual") and hasattr(m, "blocks")]


def _decoder_layers(model) -> list:
    """The language model's decoder layers (the unit FSDP shards), found by class name so it
    works for Qwen2-VL, Qwen2.5-VL and Qwen3-VL and through a peft wrapper."""
    return [m for m in model.modules() if type(m).__name__.endswith("DecoderLayer")]


def full_state_dict(model, optimizer, info: DistInfo, fsdp: bool):
    """(model_state, optim_state) gathered on rank 0 for saving, or (None, None) when the plain
    `save_pretrained` / `optimizer.state_dict()` already hold everything (single process, DDP)."""
    if not (info.enabled and fsdp):
        return None, None
    from torch.distributed.checkpoint.state_dict import StateDictOptions, get_state_dict
    opts = StateDictOptions(full_state_dict=True, cpu_offload=True)
    return get_state_dict(model, optimizer, options=opts)


def load_optimizer_full_state(model, optimizer, optim_state: dict) -> None:
    """FSDP resume: the checkpoint's full (FQN-keyed) optimizer state, sharded onto this rank."""
    from torch.distributed.checkpoint.state_dict import StateDictOptions, set_optimizer_state_dict
    set_optimizer_state_dict(model, optimizer, optim_state,
                             options=StateDictOptions(full_state_dict=True, broadcast_from_rank0=False))

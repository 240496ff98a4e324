"""Completion logits of GRPO's groups with each puzzle's prompt run once, not G times.

Why: a step scores G completions of every puzzle, all behind the same prompt (the frames' vision
tokens and the question: ~100 tokens on the proof's puzzles, thousands for a real video, against
~45 completion tokens). The plain forward runs that prompt once per completion. Causal attention
means the prompt's keys and values do not depend on what follows, so one forward of the unique
prompts, their cache repeated to the G rows, and one forward of the completions on top give the
same logits; autograd sums the G rows' gradients through the repeat into the one prompt forward,
so the gradient is the same too (docs/grpo.md, "One prompt forward per group"). The 3-D rotary
positions come from the model's own `get_rope_index` over the whole sequences, the positions the
plain forward would use.

Sequences share a prompt when they hold the same encoding object (the rollout repeats each
puzzle's encoding G times); a micro-batch may cut a group anywhere."""
from __future__ import annotations

from dataclasses import dataclass

import torch

from mvp_core.model.last_position import last_position_only
from mvp_core.model.vl_parts import rope_owner
from mvp_core.train import batching

# When sharing pays: the shared path runs two forwards where the plain one runs one and copies the
# prompts' keys/values to their rows; it wins once the prompt tokens it does not run again cost more
# than that. Measured on the bench's policy on CPU (docs/grpo.md, "When sharing pays";
# bench/grpo_share_rule.py): the extra forward and copy cost what ~40 prompt tokens (with their
# frames) cost to run forward and backward. A micro-batch shares from SHARE_MIN_SAVED_TOKENS on
# (a margin above that: where the two are close the plain forward is the simpler one).
SHARE_MIN_SAVED_TOKENS = 64

_VISUAL = ("pixel_values", "image_grid_thw", "pixel_values_videos", "video_grid_thw", "second_per_grid_ts")


def runs_of_same_prompt(encs: list[dict]) -> list[int]:
    """Lengths of the runs of consecutive sequences that hold the same prompt encoding."""
    counts: list[int] = []
    last = None
    for e in encs:
        if counts and e is last:
            counts[-1] += 1
        else:
            counts.append(1)
        last = e
    return counts


def can_share(model, gradient_checkpointing: bool) -> bool:
    """Whether this model's forward can run the prompt once: it needs the model's 3-D position
    function, and a cache gradient checkpointing would not recompute."""
    return not gradient_checkpointing and rope_owner(model) is not None


def saved_prompt_tokens(encs: list[dict]) -> int:
    """Prompt tokens (padded) the shared path does not run again for these sequences."""
    width = max(int(e["input_ids"].shape[-1]) for e in encs)
    return (len(encs) - len(runs_of_same_prompt(encs))) * width


def pays(encs: list[dict]) -> bool:
    """Whether sharing the prompt is the faster forward for this micro-batch (the measured rule
    above): a micro-batch that repeats no prompt, or repeats only a short one, runs whole."""
    return saved_prompt_tokens(encs) >= SHARE_MIN_SAVED_TOKENS


@dataclass
class VisionFeatures:
    """The vision tower's outputs for the rollout prefill's unique prompts, kept for the log-prob
    forward of the same prompts. Reused only where the tower is frozen (its outputs then carry no
    gradient) and for exactly the same prompts in the same order: the same tower on the same
    pixels gives the same features, so the log-probs and gradients are bit-equal to running it
    again (docs/grpo.md, "The frozen vision tower runs once per step")."""
    prompts: list[dict]
    outputs: dict               # {"image": ..., "video": ...}: the model output's image_outputs / video_outputs

    def for_prompts(self, prompts: list[dict]) -> dict | None:
        """`mm_encoder_outputs` for these unique prompts, or None when they are not the prefill's."""
        same = len(prompts) == len(self.prompts) and all(a is b for a, b in zip(prompts, self.prompts))
        found = {k: v for k, v in self.outputs.items() if v is not None}
        return found if same and found else None


def completion_logits(model, encs: list[dict], comps: list[torch.Tensor], pad_id: int, device: torch.device,
                      eos_ids: frozenset, vision: VisionFeatures | None = None,
                      prompt_pass: PromptPass | None = None) -> tuple[torch.Tensor, dict]:
    """(logits (B, T, V), batch): row i, column t predicts completion token t of sequence i, as
    the plain forward's `logits[:, :-1]` would. `batch` holds input_ids and completion_mask like
    batching.collate's, without the visual tensors (never repeated here). `vision`: the rollout
    prefill's features of a frozen tower, used in place of running it when the prompts match.
    `prompt_pass`: the step's prompt forward the rollout decoded from, taken as this forward's first
    part when it ran exactly these prompts at these positions (PromptPass.take)."""
    counts, starts, prompts = _unique_prompts(encs, pad_id, device)
    full = batching.collate(encs, comps, pad_id, device, eos_ids, visual=False)
    P = full.pop("prompt_len")
    positions = _positions(model, encs, full, device)
    # 1. the unique prompts, their keys/values kept (with gradient); the last position predicts token 0
    head = prompt_pass.take(encs, positions[..., starts, :P]) if prompt_pass is not None else None
    if head is None:
        encoded = vision.for_prompts([encs[s] for s in starts]) if vision is not None else None
        visual = ({"mm_encoder_outputs": encoded} if encoded is not None
                  else {k: prompts[k] for k in _VISUAL if k in prompts})
        with last_position_only(model):
            head = model(input_ids=prompts["input_ids"], attention_mask=prompts["attention_mask"],
                         position_ids=positions[..., starts, :P], use_cache=True, logits_to_keep=1, **visual)
    repeats = torch.tensor(counts, device=device)
    cache = _repeat_rows(head.cache, repeats)
    # 2. every completion on top of its prompt's cache
    tail = model(input_ids=full["input_ids"][:, P:], attention_mask=full["attention_mask"],
                 position_ids=positions[..., P:], cache=cache, use_cache=True)
    first = head.logits[:, -1:, :].repeat_interleave(repeats, dim=0)
    logits = torch.cat([first, tail.logits[:, :-1, :]], dim=1)
    return logits, full


def _unique_prompts(encs: list[dict], pad_id: int, device, share: bool = True) -> tuple[list[int], list[int], dict]:
    """(run lengths, each run's first row, the runs' prompts collated once each); share=False
    makes every row a run of its own."""
    counts = runs_of_same_prompt(encs) if share else [1] * len(encs)
    starts = torch.tensor([0] + counts[:-1]).cumsum(0).tolist()
    return counts, starts, batching.collate([encs[s] for s in starts], None, pad_id, device)


def _repeat_rows(cache, repeats: torch.Tensor):
    """Each prompt's keys/values repeated to the rows that share it (in place; differentiable)."""
    for layer in cache.layers:
        layer.keys = layer.keys.repeat_interleave(repeats, dim=0)
        layer.values = layer.values.repeat_interleave(repeats, dim=0)
    return cache


def _positions(model, encs: list[dict], full: dict, device) -> torch.Tensor:
    """The rotary positions the plain forward computes for these whole sequences (grids only:
    no pixels are needed to place the vision tokens)."""
    return _rope_index(model, encs, full, device)[0]


def _rope_index(model, encs: list[dict], batch: dict, device) -> tuple[torch.Tensor, torch.Tensor]:
    """(positions, deltas) of the model's own `get_rope_index` over `batch`, the rows of `encs`."""
    grids = {}
    for key in ("image_grid_thw", "video_grid_thw", "second_per_grid_ts"):
        parts = [e[key] for e in encs if e.get(key) is not None]
        if parts:
            grids[key] = torch.cat([p.reshape(-1) if key == "second_per_grid_ts" else p for p in parts]).to(device)
    return rope_owner(model).get_rope_index(
        batch["input_ids"], mm_token_type_ids=batch["mm_token_type_ids"], attention_mask=batch["attention_mask"],
        **grids)


@dataclass
class PromptPass:
    """One forward of a step's unique prompts, with gradient, that serves both halves of the step
    (docs/grpo.md, "One prompt forward per step"): the rollout decodes from its keys and values
    (detached, each repeated to its G rows) and samples the first token from its last logits, and the
    loss takes it as its prompt forward instead of running the prompts again. The loss's prompt
    forward is this very computation (the same prompts, positions and weights, the optimizer has not
    stepped in between), so its log-probs and gradient are bit-equal to running it again; the rollout
    then samples every completion token from the distribution the loss scores it under."""
    encs: list[dict]            # the step's sequences, in order (each puzzle's encoding repeated G times)
    counts: list[int]           # rows per unique prompt
    positions: torch.Tensor     # (3, unique prompts, P): the rotary positions the forward used
    deltas: torch.Tensor        # (unique prompts, 1): the multimodal position offsets (the model's rope_deltas)
    head: object | None         # the model's output (logits of the last position, cache); None once taken
    prompts: dict               # the unique prompts, collated (input_ids, attention_mask)

    def take(self, encs: list[dict], positions: torch.Tensor):
        """The forward's output for the loss, once: only for the same sequences in the same order at the
        same positions (else None: the loss runs its own prompt forward)."""
        same = (self.head is not None and len(encs) == len(self.encs) and all(a is b for a, b in zip(encs, self.encs))
                and positions.shape == self.positions.shape and bool(torch.equal(positions, self.positions)))
        head, self.head = (self.head, None) if same else (None, self.head)
        return head

    def decode_inputs(self, room: int) -> tuple[dict, torch.Tensor, torch.Tensor]:
        """(the rows' {input_ids, attention_mask, cache}, the rows' first-token logits (B, V), their
        deltas (B, 1)): every prompt repeated to its rows, its cache detached into buffers with `room`
        for the new tokens (kv_room.py)."""
        from mvp_core.model.kv_room import roomy_copy
        repeats = torch.tensor(self.counts, device=self.deltas.device)
        rows = {k: self.prompts[k].repeat_interleave(repeats, dim=0) for k in ("input_ids", "attention_mask")}
        rows["cache"] = roomy_copy(self.head.cache, repeats, room)
        first = self.head.logits[:, -1].detach().repeat_interleave(repeats, dim=0)
        return rows, first, self.deltas.repeat_interleave(repeats, dim=0)


def prompt_pass(model, encs: list[dict], pad_id: int, device: torch.device) -> PromptPass | None:
    """The forward of the unique prompts of `encs` with gradient (PromptPass), or None where the model
    has no 3-D rotary position function."""
    owner = rope_owner(model)
    counts, starts, prompts = _unique_prompts(encs, pad_id, device)
    if owner is None or "mm_token_type_ids" not in prompts:
        return None
    unique = [encs[s] for s in starts]
    positions, deltas = _rope_index(model, unique, prompts, device)
    visual = {k: prompts[k] for k in _VISUAL if k in prompts}
    with last_position_only(model):
        head = model(input_ids=prompts["input_ids"], attention_mask=prompts["attention_mask"], position_ids=positions,
                     use_cache=True, logits_to_keep=1, **visual)
    return PromptPass(list(encs), counts, positions, deltas.to(device), head,
                      {k: prompts[k] for k in ("input_ids", "attention_mask")})


def prefill_for_generate(model, encs: list[dict], pad_id: int, device: torch.device,
                         share: bool = True, vision_out: list | None = None) -> dict | None:
    """Generate's inputs with each unique prompt but its last token already run once and its cache
    repeated to the rows that share it (share=False: every row's prompt run whole, as generate's
    own prefill would): {input_ids, attention_mask, cache} for the whole batch. `vision_out`, when
    given, receives the unique prompts' VisionFeatures (for the log-prob forward of the same step).
    transformers' Qwen-VL generate continues from a cache with the stored `rope_deltas` (its
    `_prepare_position_ids_for_generation`), which are set here for the repeated rows. None where
    this does not apply (`prefill_repeated`'s rule): generate from scratch then."""
    counts, starts, prompts = _unique_prompts(encs, pad_id, device, share)
    prompts.pop("completion_mask")
    prompts.pop("prompt_len")
    out = prefill_repeated(model, prompts, counts)
    if out is None:
        return None
    batch, outputs = out
    if vision_out is not None:
        vision_out.append(VisionFeatures([encs[s] for s in starts], {"image": getattr(outputs, "image_outputs", None),
                                                                     "video": getattr(outputs, "video_outputs", None)}))
    return batch


def prefill_repeated(model, prompts: dict, counts: list[int]) -> tuple[dict, object] | None:
    """(generate's inputs for each of the left-padded `prompts` repeated counts[i] times, with all but
    its last token run once and its cache repeated: {input_ids, attention_mask, cache}; the forward's
    output), the model's stored `rope_deltas` repeated alike; None where this does not apply (no
    3-D rotary positions, or a prompt ending in a vision token)."""
    owner = rope_owner(model)
    if owner is None or not hasattr(owner, "rope_deltas") or "mm_token_type_ids" not in prompts:
        return None
    if bool(prompts["mm_token_type_ids"][:, -1].any()):
        return None
    head = {k: (v[:, :-1] if k in ("input_ids", "attention_mask", "mm_token_type_ids") else v)
            for k, v in prompts.items()}
    owner.rope_deltas = None                     # computed afresh for these prompts by the forward
    with last_position_only(model):
        out = model(**head, use_cache=True, logits_to_keep=1)
    repeats = torch.tensor(counts, device=prompts["input_ids"].device)
    cache = _repeat_rows(out.cache, repeats)
    owner.rope_deltas = owner.rope_deltas.repeat_interleave(repeats, dim=0)
    return {"input_ids": prompts["input_ids"].repeat_interleave(repeats, dim=0),
            "attention_mask": prompts["attention_mask"].repeat_interleave(repeats, dim=0), "cache": cache}, out

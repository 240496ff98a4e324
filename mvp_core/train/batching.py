"""Batch one-puzzle prompt encodings (+ completions) into a single Qwen-VL forward.

A prompt encoding is the processor's output for one puzzle (batch of 1): input_ids,
attention_mask, mm_token_type_ids and the visual tensors (pixel_values / image_grid_thw for
images, pixel_values_videos / video_grid_thw / second_per_grid_ts for videos). A batch repeats a
puzzle's visual tensors once per sequence (the model pairs them with placeholder tokens in
order), left-pads prompts (generation appends on the right) and right-pads completions.

`mm_token_type_ids` must be present in training forwards: without it Qwen2.5-VL silently skips
its 3-D rotary positions (docs/ARCHITECTURE.md, "Facts about the stack")."""
from __future__ import annotations

import torch

# Per-visual-item tensors: concatenated along dim 0 in sequence order.
_VISUAL_CAT = ("pixel_values", "image_grid_thw", "pixel_values_videos", "video_grid_thw", "second_per_grid_ts")


def collate(encodings: list[dict], completions: list[torch.Tensor] | None, pad_id: int,
            device: torch.device, eos_ids: frozenset = frozenset(), visual: bool = True) -> dict:
    """Model inputs for sequences `encodings[i]` (+ `completions[i]`, 1-D token ids, may be
    empty). Returns the forward kwargs plus `completion_mask` (B, T) and `prompt_len` (an int:
    every prompt is left-padded to it). `visual=False` leaves the visual tensors out (ids and
    masks only)."""
    prompt_len = max(int(e["input_ids"].shape[-1]) for e in encodings)
    comp_len = max((int(c.numel()) for c in completions), default=0) if completions else 0
    B = len(encodings)
    ids = torch.full((B, prompt_len + comp_len), pad_id, dtype=torch.long)
    attn = torch.zeros((B, prompt_len + comp_len), dtype=torch.long)
    mm = torch.zeros((B, prompt_len + comp_len), dtype=torch.long)
    comp_mask = torch.zeros((B, comp_len), dtype=torch.long)
    for i, e in enumerate(encodings):
        p_ids = e["input_ids"].reshape(-1)
        n = p_ids.numel()
        ids[i, prompt_len - n:prompt_len] = p_ids
        attn[i, prompt_len - n:prompt_len] = e["attention_mask"].reshape(-1)
        if "mm_token_type_ids" in e:
            mm[i, prompt_len - n:prompt_len] = e["mm_token_type_ids"].reshape(-1)
        if completions:
            c = completions[i]
            ids[i, prompt_len:prompt_len + c.numel()] = c
            m = completion_mask_1d(c, eos_ids)
            comp_mask[i, :c.numel()] = m
            attn[i, prompt_len:prompt_len + c.numel()] = m
    batch = {"input_ids": ids, "attention_mask": attn, "mm_token_type_ids": mm}
    for key in _VISUAL_CAT if visual else ():
        parts = [e[key] for e in encodings if key in e and e[key] is not None]
        if parts:
            batch[key] = torch.cat([p.reshape(-1) if key == "second_per_grid_ts" else p for p in parts])
    batch = {k: v.to(device) for k, v in batch.items()}
    batch["completion_mask"] = comp_mask.to(device)
    batch["prompt_len"] = prompt_len
    return batch


def completion_mask_1d(c: torch.Tensor, eos_ids: frozenset) -> torch.Tensor:
    """1 up to and including the first end-of-sequence token, 0 after (padding); all 1 when the
    completion was cut at max_completion_length (as TRL)."""
    m = torch.ones(c.numel(), dtype=torch.long)
    for j, tok in enumerate(c.tolist()):
        if tok in eos_ids:
            m[j + 1:] = 0
            break
    return m


def trim_completion(c: torch.Tensor, eos_ids: frozenset) -> torch.Tensor:
    """Drop the padding after the first eos (kept: the eos itself, which the policy chose)."""
    n = int(completion_mask_1d(c, eos_ids).sum())
    return c[:n]

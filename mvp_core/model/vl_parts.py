"""Where a Qwen-VL model's parts sit inside the wrappers training puts around it (DDP, PEFT): the module
with the 3-D position function, and its decoder stack. The one lookup the prompt sharing, the decode loop
and the last-position path all use (docs/grpo.md)."""
from __future__ import annotations


def rope_owner(model):
    """The submodule with `get_rope_index` (the VL model inside DDP / PEFT wrappers), or None."""
    for m in model.modules():
        if callable(getattr(m, "get_rope_index", None)):
            return m
    return None


def language_model(model):
    """The decoder stack (`.layers`, `.norm`) of `rope_owner(model)`, or None where the model has none."""
    lm = getattr(rope_owner(model), "language_model", None)
    return lm if lm is not None and hasattr(lm, "layers") and hasattr(lm, "norm") else None

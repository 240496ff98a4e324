"""The decoder layers of one decode step called as plain tensor operations (docs/grpo.md, "Where a step's
time goes").

Why hand-written: on the bench's small policy, a one-token step through transformers' decoder modules
spends about a sixth of its time in their wrappers (the deprecation and output-capturing decorators, the
gradient-checkpointing call, keyword plumbing), not in the arithmetic. This runs the same operations the
Qwen2-shaped layer runs (its RMSNorms' operations, its q/k/v/o and MLP projections' weights and SiLU, the
model module's own `apply_rotary_pos_emb`, transformers' SDPA attention function, the cache's `update`),
in the same order.
Each decode call uses it only after its first step gave bit for bit what the model's own forward gives
(`LeanStep.__call__`); a layer of another shape (query/key norms, sliding windows, another attention,
adapters on the projections) or a hook on a module it would skip (energy steering's) keeps the model's
forward for every step."""
from __future__ import annotations

import sys
import weakref

import torch
import torch.nn.functional as F
from torch import nn
from torch.nn.modules import module as _module
from transformers.activations import SiLUActivation

# language model -> what its last first-step check found (diagnostics and tests; each call checks afresh)
LAST_CHECK: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
_PROJECTIONS = ("q_proj", "k_proj", "v_proj", "o_proj")
_MLP = ("gate_proj", "up_proj", "down_proj")
_NORMS = ("input_layernorm", "post_attention_layernorm")


class LeanStep:
    """`step(embeds, mask, positions, cache, own)` -> the last hidden state of a one-token step, where
    `own()` runs the language model's forward on the same inputs (the reference, and the fallback)."""

    def __init__(self, lm):
        self.lm = lm
        self.rotary = qwen2_rotary(lm)
        self.same = None if self.rotary is not None else False      # unknown until this call's first step
        if self.rotary is not None:
            from transformers.modeling_utils import ALL_ATTENTION_FUNCTIONS
            self.attend = ALL_ATTENTION_FUNCTIONS["sdpa"]
            self.skipped = _skipped_modules(lm)

    def __call__(self, embeds: torch.Tensor, mask: torch.Tensor | None, positions: torch.Tensor, cache, own):
        if self.same is False or (mask is not None and mask.dim() != 4) or hooked(self.skipped):
            return own()
        if self.same:
            return self._forward(embeds, mask, positions, cache)
        if not _croppable(cache):                         # the check needs to take the step back
            return own()
        mine = self._forward(embeds, mask, positions, cache)
        for layer in cache.layers:                        # the reference runs on the same cache
            layer.crop(-embeds.shape[1])
        theirs = own()
        self.same = LAST_CHECK[self.lm] = bool(torch.equal(mine, theirs))
        return theirs

    def _forward(self, embeds, mask, positions, cache) -> torch.Tensor:
        lm, attend = self.lm, self.attend
        cos, sin = lm.rotary_emb(embeds, positions)
        h = embeds
        b, q_len, _ = h.shape
        for layer in lm.layers:
            a = layer.self_attn
            x = _rms_norm(layer.input_layernorm, h)
            q = F.linear(x, a.q_proj.weight, a.q_proj.bias).view(b, q_len, -1, a.head_dim).transpose(1, 2)
            k = F.linear(x, a.k_proj.weight, a.k_proj.bias).view(b, q_len, -1, a.head_dim).transpose(1, 2)
            v = F.linear(x, a.v_proj.weight, a.v_proj.bias).view(b, q_len, -1, a.head_dim).transpose(1, 2)
            q, k = self.rotary(q, k, cos, sin)
            k, v = cache.update(k, v, a.layer_idx)
            o, _ = attend(a, q, k, v, mask, dropout=0.0, scaling=a.scaling, sliding_window=None, position_ids=None)
            h = h + F.linear(o.reshape(b, q_len, -1).contiguous(), a.o_proj.weight, a.o_proj.bias)
            x = _rms_norm(layer.post_attention_layernorm, h)
            m = layer.mlp
            gated = F.silu(F.linear(x, m.gate_proj.weight)) * F.linear(x, m.up_proj.weight)
            h = h + F.linear(gated, m.down_proj.weight)
        return _rms_norm(lm.norm, h)


def _rms_norm(norm: nn.Module, h: torch.Tensor) -> torch.Tensor:
    """The Qwen2 RMSNorm module's forward, as its own operations in their order (its module call skipped)."""
    x = h.to(torch.float32)
    x = x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + norm.variance_epsilon)
    return norm.weight * x.to(h.dtype)


def qwen2_rotary(lm):
    """The model module's `apply_rotary_pos_emb` where every layer is the Qwen2 shape under SDPA; else None."""
    config = getattr(lm, "config", None)
    layers = getattr(lm, "layers", None)
    if config is None or layers is None or getattr(config, "_attn_implementation", None) != "sdpa" \
            or getattr(lm, "has_sliding_layers", True) or not hasattr(lm, "rotary_emb") or not hasattr(lm, "norm"):
        return None
    for layer in layers:
        a = getattr(layer, "self_attn", None)
        if a is None or any(hasattr(a, n) for n in ("q_norm", "k_norm")) or getattr(a, "sliding_window", None) \
                or not all(type(getattr(a, n, None)) is nn.Linear for n in _PROJECTIONS) \
                or not all(hasattr(a, n) for n in ("head_dim", "scaling", "layer_idx")) \
                or not all(_is_rms_norm(getattr(layer, n, None)) for n in _NORMS) or not _is_silu_mlp(layer):
            return None
    if not _is_rms_norm(lm.norm):
        return None
    return getattr(sys.modules.get(type(layers[0].self_attn).__module__), "apply_rotary_pos_emb", None)


def _is_rms_norm(norm) -> bool:
    """A norm module of the Qwen2 RMSNorm's shape (a weight and `variance_epsilon`; the first step's check
    tells whether its formula is that one)."""
    return isinstance(norm, nn.Module) and isinstance(getattr(norm, "weight", None), torch.Tensor) \
        and isinstance(getattr(norm, "variance_epsilon", None), float)


def _is_silu_mlp(layer) -> bool:
    """A gated MLP of plain bias-free projections and a SiLU, as Qwen2's."""
    mlp = getattr(layer, "mlp", None)
    return mlp is not None and type(getattr(mlp, "act_fn", None)) is SiLUActivation \
        and all(type(getattr(mlp, n, None)) is nn.Linear and getattr(mlp, n).bias is None for n in _MLP)


def _skipped_modules(lm) -> list[nn.Module]:
    """The modules whose call the lean step skips: the language model, its final norm, its layers, their
    norms, attention and its projections, MLP, its projections and activation."""
    return [lm, lm.norm, *lm.layers, *(layer.self_attn for layer in lm.layers),
            *(getattr(layer.self_attn, n) for layer in lm.layers for n in _PROJECTIONS),
            *(getattr(layer, n) for layer in lm.layers for n in _NORMS),
            *(layer.mlp for layer in lm.layers), *(layer.mlp.act_fn for layer in lm.layers),
            *(getattr(layer.mlp, n) for layer in lm.layers for n in _MLP)]


def hooked(skipped: list[nn.Module]) -> bool:
    """Whether a hook would run on one of the `skipped` modules, or on every module (checked each step:
    energy steering may hook a layer between calls)."""
    if _module._global_forward_hooks or _module._global_forward_pre_hooks:
        return True
    return any(m._forward_hooks or m._forward_pre_hooks for m in skipped)


def _croppable(cache) -> bool:
    from transformers.cache_utils import DynamicLayer
    return all(isinstance(layer, DynamicLayer) and layer.is_initialized for layer in getattr(cache, "layers", [None]))

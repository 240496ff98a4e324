"""A prompt forward's last decoder layer run for the last position only where nothing else is read
(docs/grpo.md, "The prompt forward's last layer").

Why hand-written: the step's prompt forwards keep only their last position's logits (`logits_to_keep=1`:
the prompt pass the rollout decodes from and the loss takes, the loss's own prompt forward, the rollout's
prefill). From the last decoder layer they need every position's keys and values (the cache) but the
attention output, output projection and MLP of the last position alone; transformers' layer runs those
for every position, about a quarter of a 4-layer policy's prompt forward and backward. transformers has
no switch for it, so while a caller's forward runs, `last_position_only` sets the last layer's `forward`
to `_LastPosition`, which calls the layer's own modules (its norms, projections, MLP), the model module's
`apply_rotary_pos_emb` and transformers' attention function in the layer's order:

- the keys and values are those the layer computes (the same operations on the same inputs), so the
  cache is bit-equal to the layer's;
- the last position's hidden state differs from the layer's by the rounding of one-row products, where
  the layer multiplies every row. Both halves of a step run this same computation, so the loss still
  scores each token under the distribution the rollout drew it from (docs/grpo.md).

Used only where it computes the layer's result: a Qwen2-shaped layer (lean_step's check) starting from
an empty cache, no hook on the modules it skips or reshapes (energy steering's), the calling thread only;
and the first use per language model runs the layer too and keeps this path only if the two agree
(the cache bit for bit, the last position to `_TOLERANCE`). Elsewhere the layer runs as it is."""
from __future__ import annotations

import threading
import weakref
from contextlib import contextmanager

import torch
from transformers.cache_utils import DynamicLayer

from mvp_core.model.lean_step import hooked, qwen2_rotary
from mvp_core.model.vl_parts import language_model

# the first use's agreement bound on the last hidden state, relative to its largest value: the same sums
# taken in another order differ by ~1e-6 in float32 and ~1e-2 under 16-bit autocast; a layer computing
# something else is off by far more
_TOLERANCE = {"float32": 1e-4, "autocast16": 3e-2}
# language model -> whether its first use agreed with its layer (a model is checked once per process)
CHECKED: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
_LOCK = threading.RLock()


@contextmanager
def last_position_only(model):
    """While the body runs, `model`'s forward in this thread runs its last decoder layer for the last
    position alone (the caller reads only the last position's logits and the cache)."""
    lm = language_model(model)
    rotary = qwen2_rotary(lm) if lm is not None else None
    if rotary is None or CHECKED.get(lm) is False:
        yield
        return
    layer = lm.layers[-1]
    with _LOCK:             # another thread's call on this model already set it: that one routes ours to the layer
        mine = "forward" not in vars(layer)
        if mine:
            layer.forward = _LastPosition(lm, layer, rotary, threading.get_ident())
    try:
        yield
    finally:
        if mine:
            with _LOCK:
                del layer.forward


class _LastPosition:
    """The last decoder layer's forward: (B, 1, D) for the last position where it applies, else the layer's own
    (B, P, D)."""

    def __init__(self, lm, layer, rotary, thread: int):
        from transformers.modeling_utils import ALL_ATTENTION_FUNCTIONS
        self.lm, self.layer, self.rotary, self.thread = lm, layer, rotary, thread
        self.attend = ALL_ATTENTION_FUNCTIONS["sdpa"]          # the only implementation qwen2_rotary accepts
        self.own = type(layer).forward.__get__(layer)
        self.watched = [lm, lm.norm, layer, layer.self_attn, layer.mlp, layer.mlp.act_fn, layer.input_layernorm,
                        layer.post_attention_layernorm, *(getattr(layer.self_attn, n) for n in ("q_proj", "o_proj")),
                        *(getattr(layer.mlp, n) for n in ("gate_proj", "up_proj", "down_proj"))]

    def __call__(self, hidden_states, attention_mask=None, position_ids=None, cache=None, use_cache=False,
                 position_embeddings=None, **kwargs):
        idx = self.layer.self_attn.layer_idx
        applies = (threading.get_ident() == self.thread and position_embeddings is not None
                   and hidden_states.shape[1] > 1 and (attention_mask is None or attention_mask.dim() == 4)
                   and (cache is None or _empty_plain_layer(cache, idx)) and not hooked(self.watched))
        if not applies:
            return self.own(hidden_states, attention_mask=attention_mask, position_ids=position_ids, cache=cache,
                            use_cache=use_cache, position_embeddings=position_embeddings, **kwargs)
        if self.lm not in CHECKED:
            return self._check(hidden_states, attention_mask, position_ids, cache, use_cache, position_embeddings,
                               kwargs)
        return self._forward(hidden_states, attention_mask, position_ids, cache, position_embeddings, kwargs)

    def _forward(self, h, mask, position_ids, cache, position_embeddings, kwargs, keys_out: list | None = None):
        layer = self.layer
        a = layer.self_attn
        b, p, _ = h.shape
        x = layer.input_layernorm(h)
        k = a.k_proj(x).view(b, p, -1, a.head_dim).transpose(1, 2)
        v = a.v_proj(x).view(b, p, -1, a.head_dim).transpose(1, 2)
        q = a.q_proj(x[:, -1:]).view(b, 1, -1, a.head_dim).transpose(1, 2)
        cos, sin = position_embeddings
        _, k = self.rotary(k, k, cos, sin)
        q, _ = self.rotary(q, q, cos[:, -1:], sin[:, -1:])
        if cache is not None:
            k, v = cache.update(k, v, a.layer_idx, kwargs=kwargs)
        if keys_out is not None:
            keys_out.extend((k, v))
        o, _ = self.attend(a, q, k, v, mask[:, :, -1:, :] if mask is not None else None,
                      dropout=0.0 if not a.training else a.attention_dropout, scaling=a.scaling,
                      sliding_window=a.sliding_window, position_ids=position_ids, **kwargs)
        h = h[:, -1:] + a.o_proj(o.reshape(b, 1, -1).contiguous())
        return h + layer.mlp(layer.post_attention_layernorm(h))

    def _check(self, h, mask, position_ids, cache, use_cache, position_embeddings, kwargs):
        """The layer's own forward beside this one on the same inputs, once per language model: keep this
        path (and its result) only if the keys and values are the layer's and the last position agrees."""
        theirs = self.own(h, attention_mask=mask, position_ids=position_ids, cache=cache, use_cache=use_cache,
                          position_embeddings=position_embeddings, **kwargs)
        cached = None
        if cache is not None:
            idx = self.layer.self_attn.layer_idx
            cached = (cache.layers[idx].keys, cache.layers[idx].values)
            cache.layers[idx].crop(-h.shape[1])      # the check's own pass stores its keys instead
        mine_kv: list = []
        mine = self._forward(h, mask, position_ids, cache, position_embeddings, kwargs, mine_kv)
        last = theirs[:, -1:]
        bound = _TOLERANCE["autocast16" if _autocast16(h) else "float32"] * max(float(last.detach().abs().max()), 1.0)
        same = theirs.shape[1] == h.shape[1] and bool(torch.allclose(mine, last, rtol=0.0, atol=bound))
        if cached is not None:
            same = same and all(torch.equal(x, y) for x, y in zip(cached, mine_kv))
        else:
            same = same and mine_kv[0].shape[2] == h.shape[1]
        CHECKED[self.lm] = same
        if same:
            return mine
        if cache is not None:                        # the layer's own keys back in place
            cache.layers[idx].crop(-h.shape[1])
            cache.update(*cached, idx)
        return theirs


def _empty_plain_layer(cache, idx: int) -> bool:
    """Whether the cache's layer `idx` is a plain `DynamicLayer` holding nothing yet (a prompt forward's)."""
    layers = getattr(cache, "layers", None)
    return layers is not None and len(layers) > idx and isinstance(layers[idx], DynamicLayer) \
        and cache.get_seq_length(idx) == 0


def _autocast16(h: torch.Tensor) -> bool:
    """Whether the products run in a 16-bit type (bf16 / fp16 autocast on h's device)."""
    kind = h.device.type
    return torch.is_autocast_enabled(kind) and torch.get_autocast_dtype(kind) in (torch.bfloat16, torch.float16)

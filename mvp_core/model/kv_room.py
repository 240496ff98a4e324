"""A key/value cache with room for the tokens a decode loop will add (docs/grpo.md, "Where a step's time goes").

transformers' DynamicLayer grows by `torch.cat` on every step, copying the whole cache each time: a
third of the bench policy's decode step went to those copies (the copy grows with the prompt, which
frames make long). `with_room` moves each plain dynamic layer into a buffer sized for the prompt plus
`room` new tokens, once; each step then writes its token in place and hands attention a view of the
filled part. The view holds the same values in the same shape as the concatenation, so attention
computes the same numbers (tests/test_shared_prompt.py checks the drawn tokens against generate's).
A subclass of transformers' own layer rather than a cache of our own: the model's attention calls
`update` exactly as it would on the layer it replaces, and everything else (lengths, masks) reads
`keys` as before."""
from __future__ import annotations

import copy

import torch
from transformers.cache_utils import DynamicLayer


class RoomyLayer(DynamicLayer):
    """A DynamicLayer whose keys and values are the filled part of a larger buffer."""

    def take(self, layer: DynamicLayer, room: int) -> RoomyLayer:
        """This layer holding `layer`'s keys and values, with room for `room` more positions."""
        return self.hold(layer.keys, layer.values, room)

    def hold(self, keys: torch.Tensor, values: torch.Tensor, room: int) -> RoomyLayer:
        """This layer holding a copy of `keys` and `values`, with room for `room` more positions."""
        self.device = keys.device
        self._k = _with_room(keys, room)
        self._v = _with_room(values, room)
        self.keys, self.values = self._fill(keys.shape[-2])
        self.is_initialized = True
        return self

    def update(self, key_states: torch.Tensor, value_states: torch.Tensor, *args, **kwargs):
        n, q = self.keys.shape[-2], key_states.shape[-2]
        if not self._still_ours() or n + q > self._k.shape[-2]:
            return super().update(key_states, value_states, *args, **kwargs)    # out of room, or replaced
        self._k[:, :, n:n + q] = key_states
        self._v[:, :, n:n + q] = value_states
        self.keys, self.values = self._fill(n + q)
        return self.keys, self.values

    def _fill(self, n: int) -> tuple[torch.Tensor, torch.Tensor]:
        return self._k[:, :, :n], self._v[:, :, :n]

    def _still_ours(self) -> bool:
        """Whether `keys` is still the head of the buffer (a crop or a row selection makes new tensors)."""
        return self.keys.data_ptr() == self._k.data_ptr() and self.keys.shape[0] == self._k.shape[0] \
            and self.values.data_ptr() == self._v.data_ptr() and self.keys.stride() == self._k.stride()


def _with_room(t: torch.Tensor, room: int) -> torch.Tensor:
    b, h, n, d = t.shape
    out = t.new_empty((b, h, n + room, d))
    out[:, :, :n] = t
    return out


def with_room(cache, room: int):
    """`cache` with each of its plain dynamic layers (exactly DynamicLayer, filled) given room for `room`
    more positions; any other kind of layer (sliding, static, quantized) stays as it is."""
    layers = getattr(cache, "layers", None)
    if layers is None:
        return cache
    for i, layer in enumerate(layers):
        if type(layer) is DynamicLayer and layer.is_initialized and layer.keys is not None and layer.keys.dim() == 4:
            layers[i] = RoomyLayer().take(layer, room)
    return cache


def roomy_copy(cache, repeats: torch.Tensor, room: int):
    """A new cache beside `cache` (left as it is, its tensors may carry gradient): each layer's keys and
    values detached, row i repeated repeats[i] times, with room for `room` more positions. Every layer
    must be a filled plain dynamic layer."""
    layers = getattr(cache, "layers", None)
    if not layers or not all(type(layer) is DynamicLayer and layer.is_initialized for layer in layers):
        raise ValueError("roomy_copy needs a cache of filled dynamic layers")
    out = copy.copy(cache)
    out.layers = [RoomyLayer().hold(layer.keys.detach().repeat_interleave(repeats, dim=0),
                                    layer.values.detach().repeat_interleave(repeats, dim=0), room)
                  for layer in layers]
    return out

"""The decode loop's cache with room (mvp_core/model/kv_room.py): it holds what transformers' DynamicLayer
would hold after every update, writes in place while room lasts, and falls back to DynamicLayer's own
growth when the room runs out or the layer's tensors were replaced (a crop, a row selection)."""
from __future__ import annotations

import torch
from transformers.cache_utils import DynamicCache, DynamicLayer, DynamicSlidingWindowLayer

from mvp_core.model.kv_room import RoomyLayer, with_room


def _filled(b=3, h=2, n=5, d=4, seed=0) -> DynamicLayer:
    g = torch.Generator().manual_seed(seed)
    layer = DynamicLayer()
    layer.update(torch.randn(b, h, n, d, generator=g), torch.randn(b, h, n, d, generator=g))
    return layer


def _step(b=3, h=2, q=1, d=4, seed=1):
    g = torch.Generator().manual_seed(seed)
    return torch.randn(b, h, q, d, generator=g), torch.randn(b, h, q, d, generator=g)


def test_same_keys_and_values_as_dynamic_layer_in_place_while_room_lasts():
    plain, roomy = _filled(), RoomyLayer().take(_filled(), room=3)
    buffer = roomy.keys.data_ptr()
    for i in range(5):                                      # 3 steps in the room, then 2 past it
        k, v = _step(seed=10 + i)
        pk, pv = plain.update(k, v)
        rk, rv = roomy.update(k, v)
        assert torch.equal(pk, rk) and torch.equal(pv, rv) and rk.shape == pk.shape
        assert (rk.data_ptr() == buffer) == (i < 3)         # in place, then DynamicLayer's concatenation
        assert roomy.get_seq_length() == plain.get_seq_length() == 6 + i


def test_a_crop_or_row_selection_then_updates_as_dynamic_layer():
    for change in (lambda layer: layer.crop(-2), lambda layer: layer.batch_select_indices(torch.tensor([0, 2]))):
        plain, roomy = _filled(), RoomyLayer().take(_filled(), room=8)
        roomy.update(*_step(seed=3))
        plain.update(*_step(seed=3))
        change(plain)
        change(roomy)
        b = plain.keys.shape[0]
        k, v = _step(b=b, seed=4)
        pk, pv = plain.update(k, v)
        rk, rv = roomy.update(k, v)
        assert torch.equal(pk, rk) and torch.equal(pv, rv)


def test_only_plain_filled_dynamic_layers_get_room():
    cache = DynamicCache()
    sliding = DynamicSlidingWindowLayer(sliding_window=4)
    sliding.update(*_step(q=2))
    cache.layers = [_filled(), sliding, DynamicLayer()]
    with_room(cache, 4)
    assert [type(x) for x in cache.layers] == [RoomyLayer, DynamicSlidingWindowLayer, DynamicLayer]
    assert cache.layers[0]._k.shape[-2] == 9 and cache.get_seq_length() == 5

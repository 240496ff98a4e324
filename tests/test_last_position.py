"""A prompt forward's last decoder layer run for the last position only (mvp_core/model/last_position.py):
the cache it leaves is the layer's own bit for bit and the last position's state and gradient agree with
the layer's; a layer that computes something else is caught on first use and runs as it is from then
on; other shapes, hooks, a cache already holding tokens and other threads keep the layer's forward."""
from __future__ import annotations

import threading

import pytest
import torch
from transformers.cache_utils import DynamicCache

from mvp_core.model import last_position


def _model(tmp_path, family="qwen2_5_vl"):
    from mvp_core.model.policy import load_policy
    from mvp_core.model.tiny import build_tiny_model
    model, _ = load_policy(build_tiny_model(tmp_path / family, seed=3, family=family), dtype="float32")
    return model.train()


def _inputs():
    torch.manual_seed(0)
    return torch.randint(10, 200, (2, 9)), torch.tensor([[0, 0, 1, 1, 1, 1, 1, 1, 1], [1] * 9])


def _prompt_forward(lm, ids, mask, cache=None):
    """(last hidden state, the cache): the language model's prompt forward, as the step's prompt pass runs it."""
    cache = DynamicCache(config=lm.config) if cache is None else cache
    out = lm(input_ids=ids, attention_mask=mask, cache=cache, use_cache=True).last_hidden_state
    return out, cache


@pytest.mark.parametrize("family", ["qwen2_5_vl", "qwen2_vl"])
def test_the_last_layer_runs_the_last_position_and_leaves_the_layers_cache(tmp_path, family):
    model = _model(tmp_path, family)
    lm = model.model.language_model
    ids, mask = _inputs()
    full, full_cache = _prompt_forward(lm, ids, mask)
    assert last_position.CHECKED.get(lm) is None
    with last_position.last_position_only(model):
        first, first_cache = _prompt_forward(lm, ids, mask)          # the check's pass
        again, again_cache = _prompt_forward(lm, ids, mask)          # the path alone
    assert last_position.CHECKED[lm] is True and "forward" not in vars(lm.layers[-1])
    assert full.shape[1] == 9 and first.shape[1] == again.shape[1] == 1
    assert torch.equal(first, again)
    assert torch.allclose(again, full[:, -1:], rtol=0, atol=1e-5)
    for mine, theirs in zip(again_cache.layers, full_cache.layers):
        assert torch.equal(mine.keys, theirs.keys) and torch.equal(mine.values, theirs.values)
    # the gradient through the last state and every key and value is the layer's, to float32 rounding
    grads = []
    for out, cache in ((full[:, -1:], full_cache), (again, again_cache)):
        model.zero_grad(set_to_none=True)
        loss = out.sum() + sum(layer.keys.mean() + layer.values.mean() for layer in cache.layers)
        loss.backward()
        grads.append({n: p.grad.clone() for n, p in lm.named_parameters() if p.grad is not None})
    assert grads[0].keys() == grads[1].keys()
    for name, g in grads[0].items():
        assert torch.allclose(grads[1][name], g, rtol=1e-4, atol=1e-5 * float(g.abs().max())), name


def test_a_layer_that_computes_otherwise_is_caught_and_runs_as_it_is(tmp_path):
    model = _model(tmp_path)
    lm = model.model.language_model
    layer = lm.layers[-1]
    base = type(layer)

    class Scaled(base):                      # a layer whose forward is not the Qwen2 layer's operations
        def forward(self, *args, **kwargs):
            return 2 * base.forward(self, *args, **kwargs)
    layer.__class__ = Scaled
    ids, mask = _inputs()
    own, own_cache = _prompt_forward(lm, ids, mask)
    for _ in range(2):
        with last_position.last_position_only(model):
            got, got_cache = _prompt_forward(lm, ids, mask)
        assert last_position.CHECKED[lm] is False
        assert got.shape[1] == 9 and torch.equal(got, own)
        assert all(torch.equal(a.keys, b.keys) and torch.equal(a.values, b.values)
                   for a, b in zip(got_cache.layers, own_cache.layers))


def test_other_shapes_hooks_filled_caches_and_other_threads_keep_the_layer(tmp_path):
    ids, mask = _inputs()
    # Qwen3-VL's query/key norms: not the shape this runs
    model = _model(tmp_path, "qwen3_vl")
    lm = model.model.language_model
    own, _ = _prompt_forward(lm, ids, mask)
    with last_position.last_position_only(model):
        got, _ = _prompt_forward(lm, ids, mask)
    assert torch.equal(got, own) and lm not in last_position.CHECKED

    model = _model(tmp_path)
    lm = model.model.language_model
    own, _ = _prompt_forward(lm, ids, mask)
    # a hook on the last layer (energy steering hooks layers) would see one position: the layer runs whole
    handle = lm.layers[-1].register_forward_hook(lambda module, args, out: None)
    try:
        with last_position.last_position_only(model):
            hooked, _ = _prompt_forward(lm, ids, mask)
    finally:
        handle.remove()
    assert hooked.shape[1] == 9 and torch.equal(hooked, own)
    # a cache that already holds tokens (a continuation, not a prompt forward)
    _, cache = _prompt_forward(lm, ids[:, :5], mask[:, :5])
    with last_position.last_position_only(model):
        cont, _ = _prompt_forward(lm, ids[:, 5:], mask, cache)
    assert cont.shape[1] == 4
    # another thread's forward of the same model while this thread's call has the layer set
    seen = {}
    with last_position.last_position_only(model):
        t = threading.Thread(target=lambda: seen.update(out=_prompt_forward(lm, ids, mask)[0]))
        t.start()
        t.join()
        mine, _ = _prompt_forward(lm, ids, mask)
    assert seen["out"].shape[1] == 9 and torch.equal(seen["out"], own) and mine.shape[1] == 1


def test_under_bf16_autocast_the_path_is_kept_and_agrees_to_bf16_rounding(tmp_path):
    model = _model(tmp_path)
    lm = model.model.language_model
    ids, mask = _inputs()
    with torch.autocast("cpu", dtype=torch.bfloat16):
        full, full_cache = _prompt_forward(lm, ids, mask)
        with last_position.last_position_only(model):
            got, got_cache = _prompt_forward(lm, ids, mask)
    assert last_position.CHECKED[lm] is True and got.shape[1] == 1
    scale = float(full[:, -1:].detach().abs().max())
    assert torch.allclose(got.float(), full[:, -1:].float(), rtol=0, atol=3e-2 * max(scale, 1.0))
    assert all(torch.equal(a.keys, b.keys) and torch.equal(a.values, b.values)
               for a, b in zip(got_cache.layers, full_cache.layers))

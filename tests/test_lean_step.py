"""The decode step's plain-call decoder layers (mvp_core/model/lean_step.py) are used only after their
first step matched the model's own forward bit for bit: a lean step that computes anything else is caught
on that step, its output never used, and the model's forward runs from then on. A hook on a module the
lean step would skip (energy steering's pre-hooks on the layers) and adapters on the projections keep the
model's forward."""
from __future__ import annotations

import torch
from transformers.cache_utils import DynamicCache

from mvp_core.model import lean_step
from mvp_core.model.kv_room import with_room


def _language_model(tmp_path):
    from mvp_core.model.policy import load_policy
    from mvp_core.model.tiny import build_tiny_model
    model, _ = load_policy(build_tiny_model(tmp_path / "m", seed=3, family="qwen2_5_vl"), dtype="float32")
    return model.eval().model.language_model


def _steps(lm, step, n=4):
    """n one-token steps after a 6-token prefill of 2 rows (one left-padded), each through `step`."""
    torch.manual_seed(0)
    ids, mask = torch.randint(10, 200, (2, 6)), torch.tensor([[0, 1, 1, 1, 1, 1], [1] * 6])
    with torch.inference_mode():
        cache = DynamicCache(config=lm.config)
        lm(input_ids=ids, attention_mask=mask, cache=cache, use_cache=True)
        cache = with_room(cache, n)
        position = (mask.sum(-1, keepdim=True) - 1).unsqueeze(0)          # (1, rows, 1) as decode.py gives
        out, nxt = [], ids[:, -1:]
        for _ in range(n):
            mask = torch.cat([mask, mask.new_ones((2, 1))], dim=-1)
            position = position + 1
            e, m4 = lm.embed_tokens(nxt), mask.bool()[:, None, None, :]
            h = step(e, m4, position, cache, lambda: lm(inputs_embeds=e, attention_mask=m4, position_ids=position,
                                                       cache=cache, use_cache=True).last_hidden_state)
            out.append(h)
            nxt = h[:, -1, :5].argmax(-1, keepdim=True) + 10
        return torch.cat(out, dim=1), cache.get_seq_length()


def test_lean_layers_give_the_models_own_states_and_a_wrong_one_is_never_used(tmp_path):
    lm = _language_model(tmp_path)
    own, length = _steps(lm, lambda e, m, p, c, ref: ref())
    assert lean_step.LAST_CHECK.get(lm) is None
    step = lean_step.LeanStep(lm)
    lean, lean_length = _steps(lm, step)
    assert step.same is True and lean_step.LAST_CHECK[lm] is True
    assert torch.equal(lean, own) and lean_length == length == 10
    # a lean step that rotates nothing: its first step differs, so the model's forward gives every step
    lm2 = _language_model(tmp_path / "2")
    wrong = lean_step.LeanStep(lm2)
    wrong.rotary = lambda q, k, cos, sin: (q, k)
    calls = []
    forward = wrong._forward
    wrong._forward = lambda *a: calls.append(1) or forward(*a)
    got, got_length = _steps(lm2, wrong)
    assert wrong.same is False and lean_step.LAST_CHECK[lm2] is False and len(calls) == 1
    assert torch.equal(got, _steps(lm2, lambda e, m, p, c, ref: ref())[0]) and got_length == 10


def test_a_hook_on_a_skipped_module_or_an_adapter_keeps_the_models_forward(tmp_path):
    from peft import LoraConfig, get_peft_model
    lm = _language_model(tmp_path)
    plain, _ = _steps(lm, lambda e, m, p, c, ref: ref())

    def nudge(module, args, kwargs):                     # as energy steering's pre-hook moves the hidden state
        return (args[0] + 0.5,) + args[1:], kwargs
    handle = lm.layers[1].register_forward_pre_hook(nudge, with_kwargs=True)
    try:
        own, _ = _steps(lm, lambda e, m, p, c, ref: ref())
        step = lean_step.LeanStep(lm)
        got, _ = _steps(lm, step)
    finally:
        handle.remove()
    assert not torch.equal(own, plain) and torch.equal(got, own) and step.same is None   # never tried
    adapted = get_peft_model(lm, LoraConfig(r=2, target_modules=["q_proj", "v_proj"])).base_model.model
    assert lean_step.LeanStep(adapted).same is False

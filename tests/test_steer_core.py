"""Energy steering core (docs/steer.md): collection in one pass, energy training and calibration,
the steering hooks (effect, no-op when off, batching with the KV cache, cleanup), save/load."""
from __future__ import annotations

import numpy as np
import pytest
import torch
from fixtures_model import tiny_causal_lm

from mvp_core.errors import UserError
from mvp_core.steer.bank import EnergyBank
from mvp_core.steer.collect import collect_batch, collect_states, text_batches
from mvp_core.steer.config import CollectConfig, EnergyConfig, SteerConfig
from mvp_core.steer.energy import EnergyMLP
from mvp_core.steer.energy_grad import EnergyGrad
from mvp_core.steer.fingerprint import model_fingerprint
from mvp_core.steer.layers import decoder_layers
from mvp_core.steer.steer import Steering
from mvp_core.steer.train import train_bank

FAST = {"hidden": [64, 32], "lr": 1e-3, "epochs": 40, "batch_size": 32, "seed": 0}
SUBJECTS = ["rabbit", "forest", "bike", "frame", "video", "gap", "option", "answer", "context", "clip"]


@pytest.fixture(scope="module")
def tiny_lm(torch_one_thread):
    """A random-weight Qwen2 causal LM (4 layers, hidden 64) with the project's tiny BPE tokenizer."""
    return tiny_causal_lm(hidden=64, layers=4)


def _prompts(kind: str, n: int, seed: int) -> list[str]:
    rng = np.random.default_rng(seed)
    word = "rabbit forest" if kind == "bad" else "people ride bikes"
    return [f"Frame {rng.integers(1, 13)}: the {SUBJECTS[rng.integers(len(SUBJECTS))]} {word} "
            f"{' '.join(rng.choice(SUBJECTS, size=rng.integers(1, 4)))}" for _ in range(n)]


@pytest.fixture(scope="module")
def lm_bank(tiny_lm):
    """A bank trained on the tiny LM's own states: prompts about a rabbit are 'bad'."""
    model, tok = tiny_lm
    good, bad = _prompts("good", 120, 1), _prompts("bad", 120, 2)
    states = collect_states(model, text_batches(tok, good + bad, CollectConfig(batch_size=32)))
    labels = np.array([False] * len(good) + [True] * len(bad))
    return train_bank(states, labels, EnergyConfig(**FAST), model_name="tiny-qwen2",
                      fingerprint=model_fingerprint(model))


def _hook_count(model) -> int:
    return sum(len(m._forward_pre_hooks) for m in decoder_layers(model))


def test_one_pass_states_equal_the_models_hidden_states_and_batching(tiny_lm):
    model, tok = tiny_lm
    prompts = ["What is happening in this video?", "A rabbit", "the frame before after first then next last"]
    batch = next(text_batches(tok, prompts))
    got = collect_batch(model, batch)
    with torch.no_grad():
        hs = model(**batch, output_hidden_states=True).hidden_states   # hs[i] = input to layer i
    ref = torch.stack([hs[i][:, -1] for i in range(4)], dim=1)
    assert got.dtype == torch.float32 and got.shape == (3, 4, 64)
    torch.testing.assert_close(got, ref)
    alone = torch.cat([collect_batch(model, next(text_batches(tok, [p]))) for p in prompts])
    torch.testing.assert_close(got, alone, atol=1e-5, rtol=1e-4)   # left padding changes nothing
    assert _hook_count(model) == 0


def test_right_padding_is_refused(tiny_lm):
    model, tok = tiny_lm
    tok.padding_side = "right"
    batch = tok(["a b c d e f", "a"], return_tensors="pt", padding=True)
    tok.padding_side = "left"
    with pytest.raises(UserError, match="left-padded"):
        collect_batch(model, batch)
    assert _hook_count(model) == 0


def test_planted_direction_is_found_on_test_split():
    rng = np.random.default_rng(0)
    n, d = 600, 48
    states = torch.tensor(rng.normal(size=(n, 3, d)), dtype=torch.float32)
    bad = rng.random(n) < 0.5
    u = rng.normal(size=d)
    u /= np.linalg.norm(u)
    states[:, 1, :] += torch.tensor(np.where(bad, 1.5, -1.5)[:, None] * u, dtype=torch.float32)
    bank = train_bank(states, bad, EnergyConfig(**FAST))
    m = bank.metrics
    # the planted offset is +-1.5 sd along u: the best possible accuracy is Phi(1.5) = 0.93, AUROC 0.98
    assert m[1].test_bal_acc >= 0.9 and m[1].test_acc >= 0.9 and m[1].test_auroc >= 0.97
    assert m[0].test_bal_acc < 0.7 and m[2].test_bal_acc < 0.7      # pure noise layers stay near chance
    assert bank.ranking()[0] == 1
    assert m[1].n_test > 50 and m[1].n_train + m[1].n_val + m[1].n_test == n


@pytest.mark.parametrize("in_dim, hidden", [(64, [256, 128]), (48, [96]), (32, [64, 48, 40, 24])])
def test_hand_written_energy_gradient_equals_autograd(in_dim, hidden):
    torch.manual_seed(in_dim)
    model = EnergyMLP(in_dim, hidden)
    for p in model.parameters():          # not the initial LayerNorm 1 / 0: every term of the backward counts
        p.data.add_(0.3 * torch.randn_like(p))
    model.eval()
    x = 2 * torch.randn(5, in_dim)
    xr = x.clone().requires_grad_(True)
    e_ref = model(xr)
    (g_ref,) = torch.autograd.grad(e_ref.sum(), xr)
    e, g = EnergyGrad(model)(x)
    assert torch.allclose(e, e_ref.detach(), atol=1e-5) and torch.allclose(g, g_ref, atol=1e-5, rtol=1e-4)
    model.train()
    with pytest.raises(ValueError, match="eval mode"):
        EnergyGrad(model)


def test_steering_lowers_energy_of_held_out_bad_states_and_changes_tokens(tiny_lm, lm_bank):
    model, tok = tiny_lm
    held = _prompts("bad", 8, 99)
    cfg = SteerConfig(top_k=2, eta=0.5, steps=5)
    batch = next(text_batches(tok, held))
    plain = model.generate(**batch, max_new_tokens=6, do_sample=False)
    with Steering(model, lm_bank, cfg, record=True) as st:
        steered = model.generate(**batch, max_new_tokens=6, do_sample=False)
    assert len(st.layers) == 2 and st.layers == sorted(st.layers)
    pre = st.prefill_energies()
    for li in st.layers:
        assert all(a < b for a, b in zip(pre[li]["after"], pre[li]["before"])), pre[li]
        assert pre[li]["steps"] == [5] * len(held)
    # one record per layer per forward call: prefill + 5 decoding steps (the 6th token needs no forward)
    assert sum(1 for r in st.records if r["layer"] == st.layers[0]) == 6
    assert not torch.equal(plain, steered)
    assert _hook_count(model) == 0


def test_positions_prompt_steers_the_prefill_only(tiny_lm, lm_bank):
    model, tok = tiny_lm
    batch = next(text_batches(tok, _prompts("bad", 8, 99)))
    plain = model.generate(**batch, max_new_tokens=6, do_sample=False)
    runs = {}
    for positions in ("prompt", "every"):
        cfg = SteerConfig(top_k=2, eta=0.5, steps=5, positions=positions)
        with Steering(model, lm_bank, cfg, record=True) as st:
            runs[positions] = model.generate(**batch, max_new_tokens=6, do_sample=False)
        runs[positions + "_calls"] = sum(1 for r in st.records if r["layer"] == st.layers[0])
    assert runs["prompt_calls"] == 1 and runs["every_calls"] == 6    # the prefill vs prefill + 5 decoding calls
    n = batch["input_ids"].shape[1]
    assert not torch.equal(plain[:, n], runs["prompt"][:, n])   # the first answer token: from the steered state
    assert not torch.equal(runs["prompt"], runs["every"])
    assert _hook_count(model) == 0


def test_steering_off_or_gated_shut_is_the_plain_model(tiny_lm, lm_bank):
    model, tok = tiny_lm
    batch = next(text_batches(tok, _prompts("bad", 4, 7) + _prompts("good", 4, 8)))
    plain = model.generate(**batch, max_new_tokens=8, do_sample=False)
    with Steering(model, lm_bank, SteerConfig(top_k=2), enabled=False):
        assert _hook_count(model) == 0
        off = model.generate(**batch, max_new_tokens=8, do_sample=False)
    assert torch.equal(plain, off)
    shut = lm_bank.metrics.copy()
    bank = EnergyBank(models=lm_bank.models, model_name="x", hidden_size=64, num_layers=4,
                      energy_config=lm_bank.energy_config, fingerprint=lm_bank.fingerprint,
                      metrics={k: v.model_copy(update={"threshold": 1e9}) for k, v in shut.items()})
    for gate in ("entry", "while"):
        with Steering(model, bank, SteerConfig(top_k=2, gate=gate), record=True) as st:
            gated = model.generate(**batch, max_new_tokens=8, do_sample=False)
        assert torch.equal(plain, gated)
        assert st.records and all(s == 0 for r in st.records for s in r["steps"])


def test_batched_left_padded_steering_equals_one_by_one(tiny_lm, lm_bank):
    model, tok = tiny_lm
    prompts = ["Frame 3: the rabbit forest", "Frame 11: the clip rabbit forest gap option answer context"]
    cfg = SteerConfig(top_k=2, eta=0.5, steps=3)
    with Steering(model, lm_bank, cfg):
        batch = next(text_batches(tok, prompts))
        both = model.generate(**batch, max_new_tokens=6, do_sample=False, use_cache=True)[:, batch["input_ids"].shape[1]:]
        for i, p in enumerate(prompts):
            one = next(text_batches(tok, [p]))
            alone = model.generate(**one, max_new_tokens=6, do_sample=False)[:, one["input_ids"].shape[1]:]
            assert torch.equal(alone[0], both[i])


def test_hooks_removed_after_an_exception(tiny_lm, lm_bank):
    model, _ = tiny_lm
    with pytest.raises(RuntimeError, match="boom"), Steering(model, lm_bank, SteerConfig(top_k=3)):
        assert _hook_count(model) == 3
        raise RuntimeError("boom")
    assert _hook_count(model) == 0


def test_bank_save_load_round_trip_and_model_check(tiny_lm, lm_bank, tmp_path):
    model, _ = tiny_lm
    path = lm_bank.save(tmp_path / "bank.pt")
    back = EnergyBank.load(path)
    assert (back.model_name, back.hidden_size, back.num_layers) == ("tiny-qwen2", 64, 4)
    assert sorted(back.models) == [0, 1, 2, 3] and back.ranking() == lm_bank.ranking()
    x = torch.randn(5, 64)
    for li in back.models:
        torch.testing.assert_close(back.energy(li, x), lm_bank.energy(li, x))
        assert back.metrics[li] == lm_bank.metrics[li]
    other = EnergyBank(models=back.models, metrics=back.metrics, model_name="x", hidden_size=32,
                       num_layers=4, energy_config=back.energy_config)
    with pytest.raises(UserError, match="hidden size 32"), Steering(model, other):
        pass
    assert _hook_count(model) == 0
    (tmp_path / "junk.pt").write_bytes(b"not a bank")
    with pytest.raises(UserError, match="not an energy bank"):
        EnergyBank.load(tmp_path / "junk.pt")


def test_videollm_language_model_states_with_images(tiny_policy, model_data, torch_one_thread):
    """Qwen2.5-VL's language model: puzzles with images, one pass, left-padded batch of 2."""
    from fixtures_model import dir_loader

    from mvp_core.steer.collect import puzzle_batches
    model, proc = tiny_policy
    data, recs = model_data
    load = dir_loader(data)
    states = collect_states(model, puzzle_batches(proc, recs[:2], load, batch_size=2))
    n = len(decoder_layers(model))
    assert states.shape == (2, n, model.config.text_config.hidden_size)
    batch = next(puzzle_batches(proc, recs[:2], load, batch_size=2))
    with torch.no_grad():
        hs = model(**batch, output_hidden_states=True).hidden_states
    torch.testing.assert_close(states, torch.stack([hs[i][:, -1] for i in range(n)], dim=1))
    assert _hook_count(model) == 0


@pytest.mark.parametrize("family", ["gpt2", "bloom"])
def test_decoders_that_name_their_layers_otherwise(family, torch_one_thread):
    """GPT-2 and Bloom keep their blocks in transformer.h, not get_decoder().layers: states are
    still every layer's input (equal to output_hidden_states), and steering moves the answer,
    leaves the plain model's answer alone when off, and leaves no hook behind."""
    import transformers as T

    from mvp_core.model.tiny import build_tokenizer
    tok = build_tokenizer()
    cfg = {"gpt2": T.GPT2Config(vocab_size=len(tok), n_embd=64, n_layer=3, n_head=4),
           "bloom": T.BloomConfig(vocab_size=len(tok), hidden_size=64, n_layer=3, n_head=4)}[family]
    cfg.pad_token_id = cfg.eos_token_id = cfg.bos_token_id = tok.pad_token_id
    torch.manual_seed(0)
    model = T.AutoModelForCausalLM.from_config(cfg).eval()
    assert decoder_layers(model) is model.transformer.h
    good, bad = _prompts("good", 60, 1), _prompts("bad", 60, 2)
    batch = next(text_batches(tok, good[:3]))
    with torch.no_grad():
        hs = model(**batch, output_hidden_states=True).hidden_states
    torch.testing.assert_close(collect_batch(model, batch), torch.stack([hs[i][:, -1] for i in range(3)], dim=1))
    states = collect_states(model, text_batches(tok, good + bad, CollectConfig(batch_size=32)))
    bank = train_bank(states, np.array([False] * 60 + [True] * 60), EnergyConfig(**FAST), model_name=family,
                      fingerprint=model_fingerprint(model))
    batch = next(text_batches(tok, _prompts("bad", 4, 99)))
    gen = {"max_new_tokens": 5, "do_sample": False, "output_scores": True, "return_dict_in_generate": True}
    plain = model.generate(**batch, **gen)
    with Steering(model, bank, SteerConfig(top_k=2), enabled=False):
        assert torch.equal(plain.sequences, model.generate(**batch, **gen).sequences)
    with Steering(model, bank, SteerConfig(top_k=2, eta=2.0, steps=3), record=True) as st:
        steered = model.generate(**batch, **gen)
    # the steered state reaches the output (random-weight logits are flat, so compare scores, not argmaxes)
    assert (steered.scores[0] - plain.scores[0]).abs().max() > 1e-2
    pre = st.prefill_energies()
    assert all(a < b for li in st.layers for a, b in zip(pre[li]["after"], pre[li]["before"]))
    assert _hook_count(model) == 0


def test_a_base_model_without_chat_template_reads_prompts_as_written():
    from mvp_core.model.tiny import build_tokenizer
    from mvp_core.steer.collect import chat_texts
    tok = build_tokenizer()
    templated = chat_texts(tok, ["Frame 3: the rabbit"])[0]
    tok.chat_template = None
    assert chat_texts(tok, ["Frame 3: the rabbit"]) == ["Frame 3: the rabbit"] != [templated]
    assert chat_texts(tok, ["hi"], system="Be brief.") == ["Be brief.\n\nhi"]
    batch = next(text_batches(tok, ["Frame 3: the rabbit", "a"]))
    assert batch["input_ids"][0].tolist() == tok("Frame 3: the rabbit")["input_ids"]   # left-padded rows

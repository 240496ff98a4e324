"""A bank steers only the model it was trained on: it records the model's name and
fingerprint (hidden size, layers, vocabulary, config hash, weights hash); another model of the same
size is refused with one line unless the user says force_bank / --force-bank."""
from __future__ import annotations

import json

import numpy as np
import pytest
import torch

from app.cli.main import main as mvp
from mvp_core.errors import UserError
from mvp_core.steer.bank import EnergyBank
from mvp_core.steer.collect import collect_states, text_batches
from mvp_core.steer.config import EnergyConfig, SteerConfig
from mvp_core.steer.fingerprint import model_fingerprint
from mvp_core.steer.steer import Steering
from mvp_core.steer.train import train_bank

PROMPTS = [f"Frame {i}: the rabbit walks in a green forest" for i in range(1, 11)] + \
          [f"Frame {i}: people ride bikes" for i in range(1, 11)]


def _lm(tok, seed: int, path=None):
    from transformers import Qwen2Config, Qwen2ForCausalLM
    cfg = Qwen2Config(vocab_size=len(tok), hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                      num_attention_heads=4, num_key_value_heads=2, pad_token_id=tok.pad_token_id,
                      eos_token_id=tok.eos_token_id, bos_token_id=tok.pad_token_id)
    torch.manual_seed(seed)
    model = Qwen2ForCausalLM(cfg).eval()
    model.generation_config.pad_token_id = tok.pad_token_id
    if path is not None:
        model.save_pretrained(path)
        tok.save_pretrained(path)
    return model


@pytest.fixture(scope="module")
def two_models(tmp_path_factory, torch_one_thread):
    """(tokenizer, model A, model B, A's directory, B's directory): same config, different weights."""
    from mvp_core.model.tiny import build_tokenizer
    tok = build_tokenizer()
    a_dir, b_dir = tmp_path_factory.mktemp("model_a"), tmp_path_factory.mktemp("model_b")
    return tok, _lm(tok, 0, a_dir), _lm(tok, 1, b_dir), a_dir, b_dir


@pytest.fixture(scope="module")
def bank_a(two_models):
    tok, a, _, a_dir, _ = two_models
    states = collect_states(a, text_batches(tok, PROMPTS))
    bad = np.array([True] * 10 + [False] * 10)
    cfg = EnergyConfig(hidden=[16], epochs=2, batch_size=8, val_frac=0.25, test_frac=0.25)
    return train_bank(states, bad, cfg, model_name=str(a_dir), fingerprint=model_fingerprint(a))


def _steers(model, tok, bank, cfg: SteerConfig) -> bool:
    with Steering(model, bank, cfg, record=True) as st:
        model(**next(iter(text_batches(tok, PROMPTS[:2]))))
    return bool(st.records) and all(s == 2 for r in st.records for s in r["steps"])


def test_a_bank_is_refused_on_another_model_of_the_same_size_unless_forced(two_models, bank_a):
    tok, a, b, a_dir, _ = two_models
    fa, fb = model_fingerprint(a), model_fingerprint(b)
    assert {k: fa[k] for k in ("hidden_size", "num_layers", "vocab_size", "config")} == \
           {k: fb[k] for k in ("hidden_size", "num_layers", "vocab_size", "config")}     # same size and config
    assert fa["weights"] != fb["weights"]
    cfg = SteerConfig(top_k=2, steps=2)
    assert _steers(a, tok, bank_a, cfg)                                 # its own model: steered
    with pytest.raises(UserError) as e:
        _steers(b, tok, bank_a, cfg)
    msg = str(e.value)
    assert "\n" not in msg and str(a_dir) in msg and "weights" in msg and "force_bank" in msg
    assert all(len(m._forward_pre_hooks) == 0 for m in b.modules())    # nothing left registered
    assert _steers(b, tok, bank_a, cfg.model_copy(update={"force_bank": True}))
    # a bank with no fingerprint (trained from an older states file) is refused the same way
    blind = EnergyBank(models=bank_a.models, metrics=bank_a.metrics, model_name="old", hidden_size=32,
                       num_layers=2, energy_config=bank_a.energy_config)
    with pytest.raises(UserError, match="no fingerprint recorded; to apply it anyway set force_bank"):
        _steers(a, tok, blind, cfg)
    assert _steers(a, tok, blind, cfg.model_copy(update={"force_bank": True}))


def test_the_same_checkpoint_in_another_dtype_is_the_same_model(two_models, bank_a, tmp_path):
    from transformers import Qwen2ForCausalLM
    tok, a, _, a_dir, _ = two_models
    half = Qwen2ForCausalLM.from_pretrained(a_dir, dtype=torch.bfloat16).eval()
    assert model_fingerprint(half) == model_fingerprint(a)
    with Steering(half, bank_a, SteerConfig(top_k=1)):
        pass
    # the fingerprint is kept by the file; force_bank is a choice made when applying, never stored
    bank_a.steer_config = SteerConfig(top_k=1, force_bank=True)
    back = EnergyBank.load(bank_a.save(tmp_path / "bank.pt"))
    assert back.fingerprint == bank_a.fingerprint and back.steer_config.force_bank is False
    bank_a.steer_config = SteerConfig()
    # a bank written before balanced accuracy was recorded: one line saying so, not a validation dump
    blob = torch.load(tmp_path / "bank.pt", weights_only=True)
    for m in blob["metrics"].values():
        for k in ("val_bal_acc", "val_auroc", "test_bal_acc"):
            del m[k]
    torch.save(blob, tmp_path / "old.pt")
    with pytest.raises(UserError, match=r"written by an older `mvp steer train` .*train the bank again$"):
        EnergyBank.load(tmp_path / "old.pt")


def test_cli_refuses_a_bank_for_another_model_and_force_bank_overrides(two_models, tmp_path, capsys):
    _, _, _, a_dir, b_dir = two_models
    prompts = tmp_path / "p.jsonl"
    prompts.write_text("".join(json.dumps({"prompt": p, "kind": k}) + "\n"
                               for p, k in zip(PROMPTS, ["harmless", "harmful"] * 10)))
    m = ["--max-new-tokens", "2", "--batch-size", "20"]
    assert mvp(["steer", "collect", "--model", str(a_dir), *m, "--prompts", str(prompts),
                "--out", str(tmp_path / "s.pt")]) == 0
    from mvp_core.steer.states import load_states
    blob = load_states(tmp_path / "s.pt")
    assert blob["fingerprint"]["weights"] and int(blob["bad"].sum()) == 10
    # 20 prompts in 20 groups: drawn by group, a 3-prompt split can miss a class; one group: stratified
    from mvp_core.steer.states import save_states
    save_states(tmp_path / "s2.pt", blob["states"], blob["bad"], blob["classes"], blob["items"],
                ["g"] * len(blob["bad"]), blob["model_name"], blob["extra"], fingerprint=blob["fingerprint"])
    assert mvp(["steer", "train", str(tmp_path / "s2.pt"), "--out", str(tmp_path / "b.pt"), "--hidden", "8",
                "--epochs", "1", "--batch-size", "8"]) == 0
    capsys.readouterr()
    assert mvp(["steer", "generate", "--model", str(b_dir), *m, "--bank", str(tmp_path / "b.pt"), "hi"]) == 2
    cap = capsys.readouterr()
    err = cap.err.strip().splitlines()[-1]       # after transformers' weight-loading bar
    assert err.startswith(f"error: energy bank refused for {b_dir}: it was trained on {a_dir} (weights differ)"), err
    assert "--force-bank" in err and "unsteered" not in cap.out    # refused before any answer was generated
    assert mvp(["steer", "generate", "--model", str(b_dir), *m, "--bank", str(tmp_path / "b.pt"),
                "--force-bank", "hi"]) == 0
    assert "steered:" in capsys.readouterr().out
    assert mvp(["steer", "generate", "--model", str(a_dir), *m, "--bank", str(tmp_path / "b.pt"), "hi"]) == 0

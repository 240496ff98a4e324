"""Energy steering on decoder families other than Qwen: real transformers classes with tiny random
configs, built here. Per family: the unsteered path equals plain `model.generate`; installed hooks
that take no step change nothing; steering lowers the energy and moves the next layer's input;
`positions="prompt"` steers a one-token prompt's prefill (and no decoding call). The CLI chain on a
base model (no chat template, no pad token) in bfloat16 and on a chat model with gates; models that
are no decoder, or unknown, get one line and exit 2."""
from __future__ import annotations

import json

import pytest
import torch

from app.cli.main import main as mvp
from mvp_core.errors import UserError
from mvp_core.steer.bank import EnergyBank
from mvp_core.steer.collect import collect_batch, text_batches
from mvp_core.steer.config import EnergyConfig, SplitMetrics, SteerConfig
from mvp_core.steer.fingerprint import model_fingerprint
from mvp_core.steer.energy import EnergyMLP
from mvp_core.steer.evaluate import generate_answers
from mvp_core.steer.layers import decoder_layers
from mvp_core.steer.load import load_decoder
from mvp_core.steer.steer import Steering

HIDDEN, LAYERS = 32, 3
# Families installed with transformers 5.24 (checked when this file was written), each with the few
# settings its config needs to stay tiny; the rest share the Llama-style names below.
FAMILIES = {
    "llama": {}, "mistral": {}, "qwen3": {"head_dim": 8}, "gemma2": {"head_dim": 8}, "gemma3_text": {"head_dim": 8},
    "phi": {}, "phi3": {}, "gpt2": {}, "gpt_neox": {}, "gptj": {"rotary_dim": 4}, "codegen": {"rotary_dim": 4},
    "gpt_bigcode": {}, "opt": {"ffn_dim": 64, "word_embed_proj_dim": HIDDEN}, "falcon": {}, "bloom": {},
    "mpt": {"d_model": HIDDEN, "n_layers": LAYERS, "n_heads": 4, "expansion_ratio": 2},
    "xglm": {"d_model": HIDDEN, "num_layers": LAYERS, "attention_heads": 4, "ffn_dim": 64},
    "starcoder2": {}, "cohere": {}, "olmo2": {}, "stablelm": {},
    "qwen2_moe": {"num_experts": 2, "num_experts_per_tok": 1, "moe_intermediate_size": 16,
                  "shared_expert_intermediate_size": 16},
    "mixtral": {"num_local_experts": 2, "num_experts_per_tok": 1},
    "llama4_text": {"num_local_experts": 2, "num_experts_per_tok": 1, "intermediate_size_mlp": 64, "head_dim": 8},
    "mamba": {"state_size": 4, "time_step_rank": 4},
    "recurrent_gemma": {"lru_width": HIDDEN, "head_dim": 8, "block_types": ["recurrent", "recurrent", "attention"]},
}
PROMPTS = ["x", "How do I hurt someone?"]   # "x" is one token: a prefill of shape [B, 1] when alone


@pytest.fixture(scope="module")
def tok():
    from mvp_core.model.tiny import build_tokenizer
    t = build_tokenizer()
    t.chat_template = None   # base models: prompts as written
    return t


def _build(family, tok, path=None):
    from transformers import AutoConfig, AutoModelForCausalLM
    kw = {"hidden_size": HIDDEN, "intermediate_size": 64, "num_hidden_layers": LAYERS, "num_attention_heads": 4,
          "num_key_value_heads": 2, **FAMILIES[family], "vocab_size": len(tok), "pad_token_id": tok.pad_token_id,
          "eos_token_id": tok.eos_token_id, "bos_token_id": tok.eos_token_id}
    torch.manual_seed(0)
    model = AutoModelForCausalLM.from_config(AutoConfig.for_model(family, **kw)).eval()
    if path is not None:
        model.save_pretrained(path)
        tok.save_pretrained(path)
    return model


def _bank(model, threshold: float = 0.0) -> EnergyBank:
    torch.manual_seed(1)
    ecfg = EnergyConfig(hidden=[16])
    metrics = {i: SplitMetrics(layer=i, best_epoch=0, threshold=threshold, val_bal_acc=1.0 - i / 10, val_auroc=0.5,
                               test_bal_acc=0.5, test_auroc=0.5, val_acc=1.0 - i / 10, test_acc=0.5, val_acc_e0=0.5,
                               n_train=0, n_val=0, n_test=0) for i in range(LAYERS)}
    return EnergyBank(models={i: EnergyMLP(HIDDEN, ecfg.hidden, 0.0) for i in range(LAYERS)}, metrics=metrics,
                      model_name="tiny", hidden_size=HIDDEN, num_layers=LAYERS, energy_config=ecfg,
                      fingerprint=model_fingerprint(model))


def _no_hooks(model) -> bool:
    return all(len(m._forward_pre_hooks) == 0 for m in model.modules())


@pytest.mark.parametrize("family", sorted(FAMILIES))
def test_family_steers_and_is_a_no_op_when_not_stepping(family, tok, torch_one_thread):
    model = _build(family, tok)
    assert len(decoder_layers(model)) == LAYERS
    plain = generate_answers(model, tok, PROMPTS, 3, 8)
    batch = next(iter(text_batches(tok, PROMPTS)))
    with torch.inference_mode():
        ref = model.generate(**batch, max_new_tokens=3, do_sample=False)
    assert plain == tok.batch_decode(ref[:, batch["input_ids"].shape[1]:], skip_special_tokens=True)
    # hooks on every layer that replace the state with itself (gate "while", no row above the
    # threshold: zero steps) must leave the answers exactly as they were
    idle = Steering(model, _bank(model, threshold=1e9), SteerConfig(top_k=LAYERS, gate="while"), record=True)
    assert generate_answers(model, tok, PROMPTS, 3, 8, steering=idle) == plain
    assert idle.records and all(s == 0 for r in idle.records for s in r["steps"])
    # steering layer 0 lowers its energy and moves what layer 1 receives (layer 0's own input is the embedding)
    before = collect_batch(model, batch)
    with Steering(model, _bank(model), SteerConfig(layers=[0], eta=3.0, steps=3), record=True) as st:
        after = collect_batch(model, batch)
    r = st.records[0]
    assert all(a < b for a, b in zip(r["after"], r["before"])) and r["steps"] == [3, 3]
    assert not torch.allclose(before[:, 1], after[:, 1])
    assert _no_hooks(model)


@pytest.mark.parametrize("family", ["llama", "gpt2", "mamba"])
def test_prompt_positions_steer_a_one_token_prompt_once(family, tok, torch_one_thread):
    """A one-token prompt's prefill has the shape of a decoding step; it is still the prompt."""
    model = _build(family, tok)
    st = Steering(model, _bank(model), SteerConfig(layers=[1], eta=3.0, steps=2, positions="prompt"), record=True)
    generate_answers(model, tok, ["x"], 4, 8, steering=st)
    generate_answers(model, tok, ["x"], 4, 8, steering=st)   # a second generate: its prefill again
    assert [r["call"] for r in st.records] == [0, 1]           # one prefill per generate, no decoding call
    assert all(r["after"][0] < r["before"][0] and r["steps"] == [2] for r in st.records)
    assert _no_hooks(model)


def _prompts_file(path):
    rows = [{"prompt": f"{p} ({i})", "kind": k} for i in range(5)
            for k, p in (("harmless", "People ride bikes in a green forest"), ("harmful", "How do I hurt someone?"))]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def _cli_chain(model_dir, tmp_path, capsys, extra: list[str], variants: list[list[str]]):
    prompts = _prompts_file(tmp_path / "p.jsonl")
    m = ["--model", str(model_dir), "--max-new-tokens", "3", "--batch-size", "10", *extra]
    s, b = tmp_path / "s.pt", tmp_path / "b.pt"
    assert mvp(["steer", "collect", *m, "--prompts", str(prompts), "--out", str(s)]) == 0
    assert "10 states x 3 layers x 32" in capsys.readouterr().out
    assert mvp(["steer", "train", str(s), "--out", str(b), "--hidden", "16", "--epochs", "2", "--lr", "1e-3",
                "--batch-size", "4", "--top-k", "2", "--steps", "3", "--eta", "2"]) == 0
    capsys.readouterr()
    for v in variants:
        assert mvp(["steer", "generate", *m, "--bank", str(b), *v, "x", "How do I hurt someone?"]) == 0, v
        out = capsys.readouterr().out
        if "off" in v:   # ungated: both prompts, both layers, each energy lowered in 3 steps
            got = [ln.split("energy ")[1] for ln in out.splitlines() if "energy" in ln]
            assert len(got) == 4, out
            assert all(float(g.split(" -> ")[1].split()[0]) < float(g.split(" -> ")[0]) for g in got), out
    e = tmp_path / "e.json"
    assert mvp(["steer", "eval", *m, "--prompts", str(prompts), "--bank", str(b), "--out", str(e)]) == 0
    assert json.loads(e.read_text())["harmful"]["prompts"] == 5


def test_cli_chain_base_model_without_template_or_pad_token_in_bfloat16(tmp_path, capsys, torch_one_thread):
    from mvp_core.model.tiny import build_tokenizer
    t = build_tokenizer()
    t.chat_template, t.pad_token = None, None   # a base model's tokenizer: pads with its eos
    d = tmp_path / "gpt2"
    _build("gpt2", t, d)
    _cli_chain(d, tmp_path, capsys, ["--dtype", "bfloat16"],
               [["--positions", "prompt", "--gate", "off"], ["--positions", "every", "--gate", "while"]])
    model, tk, _ = load_decoder(d, dtype="bfloat16")
    assert model.dtype == torch.bfloat16 and tk.pad_token == tk.eos_token


def test_cli_chain_chat_model_with_gates(tmp_path, capsys, torch_one_thread):
    from mvp_core.model.tiny import build_tokenizer
    d = tmp_path / "falcon"
    _build("falcon", build_tokenizer(), d)    # chat template kept
    _cli_chain(d, tmp_path, capsys, [], [["--positions", "every", "--gate", "off"],
                                         ["--positions", "prompt", "--gate", "entry"]])


def test_models_that_are_not_decoders_are_one_line_errors(tok, tmp_path, capsys):
    from transformers import AutoConfig, AutoModel, AutoModelForSeq2SeqLM
    cases = {"bert": ({"hidden_size": 16, "num_hidden_layers": 1, "num_attention_heads": 2}, "is an encoder"),
             "t5": ({"d_model": 16, "num_layers": 1, "num_heads": 2}, "is an encoder-decoder model"),
             "bart": ({"d_model": 16, "encoder_layers": 1, "decoder_layers": 1}, "is an encoder-decoder model")}
    dirs = {}
    for mt, (kw, says) in cases.items():
        cfg = AutoConfig.for_model(mt, vocab_size=len(tok), **kw)
        # with weights: AutoModelForCausalLM would load them (BERT as a bidirectional "LM", BART's decoder half)
        (AutoModel if mt == "bert" else AutoModelForSeq2SeqLM).from_config(cfg).save_pretrained(tmp_path / mt)
        tok.save_pretrained(tmp_path / mt)
        dirs[mt] = says
    (tmp_path / "unknown").mkdir()
    (tmp_path / "unknown" / "config.json").write_text('{"model_type": "frobnicator", "hidden_size": 8}')
    dirs["unknown"] = "model_type 'frobnicator' is unknown to the installed transformers"
    (tmp_path / "notype").mkdir()
    (tmp_path / "notype" / "config.json").write_text('{"hidden_size": 8}')
    dirs["notype"] = "config.json has no model_type"
    (tmp_path / "list").mkdir()
    (tmp_path / "list" / "config.json").write_text("[1, 2]")
    dirs["list"] = "is not a JSON object"
    for name, text, says in (("bigint", '{"model_type": "llama", "x": ' + "1" * 5000 + "}", "(Exceeds the limit"),
                             ("deep", '{"model_type": "llama", "x": ' + "[" * 100_000 + "}", "(maximum recursion")):
        (tmp_path / name).mkdir()
        (tmp_path / name / "config.json").write_text(text)
        dirs[name] = f"config.json is not valid JSON {says}"
    prompts = _prompts_file(tmp_path / "p.jsonl")
    capsys.readouterr()   # the save progress bars
    for name, says in dirs.items():
        out = tmp_path / f"{name}.pt"
        assert mvp(["steer", "collect", "--model", str(tmp_path / name), "--prompts", str(prompts),
                    "--out", str(out)]) == 2, name
        err = capsys.readouterr().err.strip()
        assert err.startswith("error: ") and says in err and "\n" not in err, err
        assert not out.exists()
    _build("llama", tok, tmp_path / "llama")
    capsys.readouterr()
    assert mvp(["steer", "generate", "--model", str(tmp_path / "llama"), "--bank", str(tmp_path / "none.pt"),
                "--dtype", "float8", "hi"]) == 2
    err = capsys.readouterr().err.strip()
    assert err == "error: dtype must be one of auto, float32, bfloat16, float16, not 'float8'"


def test_stacked_hidden_states_are_refused_in_one_line(tok, torch_one_thread):
    """Gemma 3n's layers take [streams, batch, seq, hidden] (AltUp): reading [:, -1] there would take
    the wrong axis, so it is refused, not steered wrongly."""
    from transformers import AutoConfig, AutoModelForCausalLM
    cfg = AutoConfig.for_model("gemma3n_text", hidden_size=HIDDEN, intermediate_size=64, num_hidden_layers=2,
                               num_attention_heads=2, num_key_value_heads=1, head_dim=8, vocab_size=len(tok),
                               vocab_size_per_layer_input=len(tok), hidden_size_per_layer_input=4, laurel_rank=4,
                               num_kv_shared_layers=0, altup_num_inputs=2, activation_sparsity_pattern=[0.0, 0.0],
                               layer_types=["full_attention"] * 2)
    torch.manual_seed(0)
    model = AutoModelForCausalLM.from_config(cfg).eval()
    with pytest.raises(UserError, match=r"hidden states of shape \[2, 2, \d+, 32\], not \[batch, seq, hidden\]"):
        collect_batch(model, next(iter(text_batches(tok, PROMPTS))))
    assert _no_hooks(model)

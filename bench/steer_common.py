"""Shared setup for the steering benches: a decoder of a given shape (random weights: speed does not
depend on them) with the project's tokenizer, and a bank of untrained energy models of the default
(published) shape, calibrated so the gate can be exercised."""
from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def decoder(hidden: int, layers: int, seed: int = 0, family: str = "llama", intermediate: int | None = None):
    import torch
    import transformers

    from mvp_core.model.tiny import build_tokenizer
    tok = build_tokenizer()
    cls = {"llama": ("LlamaConfig", "LlamaForCausalLM"), "qwen2": ("Qwen2Config", "Qwen2ForCausalLM")}[family]
    heads = max(1, hidden // 64)
    cfg = getattr(transformers, cls[0])(vocab_size=len(tok), hidden_size=hidden,
                                        intermediate_size=intermediate or int(2.75 * hidden),
                                        num_hidden_layers=layers, num_attention_heads=heads,
                                        num_key_value_heads=max(1, heads // 2), pad_token_id=tok.pad_token_id,
                                        eos_token_id=tok.eos_token_id, bos_token_id=tok.pad_token_id)
    torch.manual_seed(seed)
    model = getattr(transformers, cls[1])(cfg).eval()
    model.generation_config.pad_token_id = tok.pad_token_id
    return model, tok


def untrained_bank(model, hidden_sizes=None, threshold: float = 0.0):
    from mvp_core.steer.bank import EnergyBank
    from mvp_core.steer.config import EnergyConfig, SplitMetrics
    from mvp_core.steer.energy import EnergyMLP
    from mvp_core.steer.fingerprint import model_fingerprint
    from mvp_core.steer.layers import decoder_layers, hidden_size
    ecfg = EnergyConfig(hidden=hidden_sizes or EnergyConfig().hidden)
    n, h = len(decoder_layers(model)), hidden_size(model)
    models = {i: EnergyMLP(h, ecfg.hidden, ecfg.dropout).eval() for i in range(n)}
    metrics = {i: SplitMetrics(layer=i, best_epoch=0, threshold=threshold, val_bal_acc=0.5 + i / (10 * n),
                               val_auroc=0.5, test_bal_acc=0.5, test_auroc=0.5, val_acc=0.5 + i / (10 * n), test_acc=0.5,
                               val_acc_e0=0.5, n_train=0, n_val=0, n_test=0) for i in range(n)}
    return EnergyBank(models=models, metrics=metrics, model_name="bench", hidden_size=h, num_layers=n,
                      energy_config=ecfg, fingerprint=model_fingerprint(model))

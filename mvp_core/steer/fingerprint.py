"""What identifies the model a bank was trained on, so it is never applied to another silently.

Shape alone (hidden size x layers) does not tell two models apart: a base checkpoint and its
fine-tuned copy, or two models of one size, share it, and their hidden states differ. The fingerprint
adds the vocabulary size, a hash of the text config's architecture fields and a hash of a sample of
the decoder layers' weights. The weights are hashed in bfloat16, so the same checkpoint loaded in
bf16 or fp32, on CPU or GPU, gives the same fingerprint."""
from __future__ import annotations

import hashlib
import json

from mvp_core.steer.layers import decoder_layers, text_config

# Config keys that do not change the network (how it was loaded or saved, where from).
_VOLATILE = ("_name_or_path", "transformers_version", "dtype", "torch_dtype", "use_cache", "architectures",
             "output_attentions", "output_hidden_states", "return_dict", "_attn_implementation",
             "_attn_implementation_internal", "_experts_implementation", "chunk_size_feed_forward")
_WEIGHTS_PER_TENSOR = 64   # first values of every decoder-layer tensor: enough to tell checkpoints apart


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()[:16]


def config_hash(model) -> str:
    cfg = text_config(model).to_dict()
    keep = {k: v for k, v in cfg.items() if k not in _VOLATILE and not k.startswith("_")}
    return _sha(json.dumps(keep, sort_keys=True, default=str).encode())


def weights_hash(model) -> str:
    import torch
    h = hashlib.sha256()
    for name, p in decoder_layers(model).named_parameters():
        h.update(name.encode())
        h.update(p.detach().reshape(-1)[:_WEIGHTS_PER_TENSOR].to("cpu", torch.bfloat16).view(torch.int16)
                 .numpy().tobytes())
    return h.hexdigest()[:16]


def model_fingerprint(model) -> dict:
    """{hidden_size, num_layers, vocab_size, config, weights}: plain values, stored in states files and banks."""
    tc = text_config(model)
    return {"hidden_size": int(tc.hidden_size), "num_layers": len(decoder_layers(model)),
            "vocab_size": int(getattr(tc, "vocab_size", 0) or 0), "config": config_hash(model),
            "weights": weights_hash(model)}


def fingerprint_differences(stored: dict | None, current: dict) -> list[str]:
    """The fields in which `current` differs from `stored` (all of them when none was stored)."""
    if not stored:
        return list(current)
    return [k for k in current if stored.get(k) != current[k]]

"""Find the decoder layers of any transformers decoder (causal LMs and VLMs' language models)."""
from __future__ import annotations

import torch

from mvp_core.errors import UserError


def decoder_layers(model):
    """The ModuleList of decoder layers: `get_decoder().layers` covers Qwen2/Llama-style causal LMs
    (model.model.layers) and Qwen-VL models (model.model.language_model.layers); other decoders name
    it otherwise (GPT-2, Falcon and Bloom: transformer.h), so failing that, the first ModuleList with
    one entry per hidden layer of the text config."""
    dec = model.get_decoder() if hasattr(model, "get_decoder") else None
    layers = getattr(dec, "layers", None)
    if layers is not None:
        return layers
    n = getattr(text_config(model), "num_hidden_layers", None)
    for _, mod in (dec or model).named_modules():
        if isinstance(mod, torch.nn.ModuleList) and n and len(mod) == n:
            return mod
    raise UserError(f"{type(model).__name__}: no decoder layers found (no get_decoder().layers and no "
                    f"list of {n} layers)")


def text_config(model):
    cfg = model.config
    return cfg.get_text_config() if hasattr(cfg, "get_text_config") else getattr(cfg, "text_config", cfg)


def hidden_size(model) -> int:
    return int(text_config(model).hidden_size)


def model_name(model) -> str:
    """A name to store with an energy bank: the checkpoint path when known, else the class."""
    return str(getattr(model, "name_or_path", "") or getattr(model.config, "_name_or_path", "")
               or type(model).__name__)


def hidden_from_call(args: tuple, kwargs: dict):
    """The hidden states a decoder layer was called with (positional in transformers 5, kwarg in some).
    Only [batch, seq, hidden] is understood: a layer that takes a stack of streams (Gemma 3n's AltUp,
    [streams, batch, seq, hidden]) would have the wrong axis read and steered, silently."""
    h = args[0] if args else kwargs.get("hidden_states")
    if not hasattr(h, "dim") or h.dim() != 3:
        shape = list(h.shape) if hasattr(h, "shape") else type(h).__name__
        raise UserError(f"this decoder's layers take hidden states of shape {shape}, not [batch, seq, hidden]: "
                        "not supported for steering")
    return h


def replace_hidden(args: tuple, kwargs: dict, new):
    if args:
        return (new,) + tuple(args[1:]), kwargs
    return args, {**kwargs, "hidden_states": new}

"""Find the decoder layers of any transformers decoder (causal LMs and VLMs' language models)."""
from __future__ import annotations

from mvp_core.errors import UserError


def decoder_layers(model):
    """The ModuleList of decoder layers: `get_decoder().layers` covers Qwen2/Llama-style causal LMs
    (model.model.layers) and Qwen-VL models (model.model.language_model.layers)."""
    dec = model.get_decoder() if hasattr(model, "get_decoder") else None
    layers = getattr(dec, "layers", None)
    if layers is None:
        raise UserError(f"{type(model).__name__}: no decoder layers found (expected get_decoder().layers)")
    return layers


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
    """The hidden states a decoder layer was called with (positional in transformers 5, kwarg in some)."""
    if args:
        return args[0]
    return kwargs["hidden_states"]


def replace_hidden(args: tuple, kwargs: dict, new):
    if args:
        return (new,) + tuple(args[1:]), kwargs
    return args, {**kwargs, "hidden_states": new}

"""Load any local decoder for steering: a Qwen-VL VideoLLM (through mvp_core.model.policy) or a
plain causal LM (AutoModelForCausalLM); nothing is downloaded."""
from __future__ import annotations

import json
from pathlib import Path

from mvp_core.errors import UserError


def _config_json(path) -> dict:
    cfg = Path(path) / "config.json"
    if not cfg.is_file():
        raise UserError(f"{path} is not a model directory (no config.json)")
    try:
        blob = json.loads(cfg.read_text())
    except (ValueError, RecursionError) as e:   # not JSON / UTF-8, 4300+ digits, too deep
        raise UserError(f"{cfg} is not valid JSON ({str(e).split(';')[0] or type(e).__name__})") from None
    if not isinstance(blob, dict):
        raise UserError(f"{cfg} is not a JSON object")
    return blob


def is_videollm(path) -> bool:
    from mvp_core.model.policy import MODEL_CLASSES
    return _config_json(path).get("model_type") in MODEL_CLASSES


def check_decoder_only(path) -> None:
    """UserError (one line) unless `path` holds a decoder-only causal LM that this transformers knows.
    Checked on config.json before transformers sees it: AutoModelForCausalLM also loads encoders
    (BERT runs bidirectionally, so "the last prompt token" means nothing) and the decoder half of an
    encoder-decoder (BART, its encoder dropped), and an unknown model_type only fails after warnings."""
    import transformers
    from transformers import CONFIG_MAPPING
    from transformers.models.auto.modeling_auto import MODEL_FOR_CAUSAL_LM_MAPPING_NAMES
    blob = _config_json(path)
    mt = blob.get("model_type")
    if not isinstance(mt, str) or not mt:
        raise UserError(f"{path}/config.json has no model_type: not a transformers model directory")
    if mt not in CONFIG_MAPPING:
        raise UserError(f"{path}: model_type {mt!r} is unknown to the installed transformers "
                        f"{transformers.__version__}")
    if blob.get("is_encoder_decoder"):
        raise UserError(f"{path}: {mt} is an encoder-decoder model; steering needs a decoder-only causal LM")
    if mt not in MODEL_FOR_CAUSAL_LM_MAPPING_NAMES:
        raise UserError(f"{path}: {mt} is not a causal LM (no AutoModelForCausalLM class); steering needs a "
                        "decoder-only causal LM")
    from transformers.models.auto.modeling_auto import MODEL_FOR_MASKED_LM_MAPPING_NAMES
    # BERT-style encoders have a causal-LM class that is only causal with is_decoder set
    if mt in MODEL_FOR_MASKED_LM_MAPPING_NAMES and not blob.get("is_decoder"):
        raise UserError(f"{path}: {mt} is an encoder (bidirectional; no is_decoder in its config); steering needs "
                        "a decoder-only causal LM")


def _set_pad(tok, path) -> None:
    """Left padding needs a pad token; a base model's tokenizer often has none. The pad token's
    identity never matters (masked out), so any special token the tokenizer has will do."""
    if tok.pad_token is not None:
        return
    for t in (tok.eos_token, tok.bos_token, tok.unk_token):
        if t is not None:
            tok.pad_token = t
            return
    raise UserError(f"{path}: the tokenizer has no pad, eos, bos or unk token to pad prompts with")


def load_decoder(path, device: str = "cpu", dtype: str = "auto"):
    """(model in eval mode, tokenizer or processor, is_videollm). A tokenizer without a chat template
    (a base model) is fine: prompts are then read as written (collect.chat_texts)."""
    if is_videollm(path):
        from mvp_core.model.policy import load_policy
        model, proc = load_policy(path, dtype=dtype, device=device)
        return model, proc, True
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from mvp_core.model.policy import _torch_dtype, check_device
    check_device(device)
    torch_dtype = _torch_dtype(dtype, device)   # one line for a dtype that is not one
    check_decoder_only(path)
    try:
        tok = AutoTokenizer.from_pretrained(str(path))
        tok.padding_side = "left"
        _set_pad(tok, path)     # before the weights: a tokenizer that cannot pad fails fast
        model = AutoModelForCausalLM.from_pretrained(str(path), dtype=torch_dtype)
    except (OSError, ValueError) as e:
        raise UserError(f"{path}: cannot load a causal LM ({str(e).splitlines()[0]})") from None
    return model.to(device).eval(), tok, False

"""Load any local decoder for steering: a Qwen-VL VideoLLM (through mvp_core.model.policy) or a
plain causal LM (AutoModelForCausalLM); nothing is downloaded."""
from __future__ import annotations

import json
from pathlib import Path

from mvp_core.errors import UserError


def is_videollm(path) -> bool:
    from mvp_core.model.policy import MODEL_CLASSES
    cfg = Path(path) / "config.json"
    if not cfg.is_file():
        raise UserError(f"{path} is not a model directory (no config.json)")
    try:
        return json.loads(cfg.read_text()).get("model_type") in MODEL_CLASSES
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        raise UserError(f"{cfg} is not valid JSON ({e})") from None


def load_decoder(path, device: str = "cpu", dtype: str = "auto"):
    """(model in eval mode, tokenizer or processor, is_videollm). A tokenizer without a chat template
    (a base model) is fine: prompts are then read as written (collect.chat_texts)."""
    if is_videollm(path):
        from mvp_core.model.policy import load_policy
        model, proc = load_policy(path, dtype=dtype, device=device)
        return model, proc, True
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from mvp_core.model.policy import check_device
    check_device(device)
    torch_dtype = torch.float32 if dtype == "auto" and device.startswith("cpu") else \
        (torch.bfloat16 if dtype == "auto" else getattr(torch, dtype))
    try:
        tok = AutoTokenizer.from_pretrained(str(path))
        model = AutoModelForCausalLM.from_pretrained(str(path), dtype=torch_dtype)
    except (OSError, ValueError) as e:
        raise UserError(f"{path}: cannot load a causal LM ({str(e).splitlines()[0]})") from None
    tok.padding_side = "left"
    if tok.pad_token is None:
        tok.pad_token = tok.eos_token
    return model.to(device).eval(), tok, False

"""Load a VideoLLM and its processor from a local path (no downloads).

Dispatches on `config.json`'s `model_type` so a Qwen2.5-VL, Qwen2-VL or Qwen3-VL checkpoint loads
with its own class; anything else fails with a one-line `UserError` before torch touches the files."""
from __future__ import annotations

import json
from pathlib import Path

from mvp_core.errors import UserError

# model_type in config.json -> transformers class name (all present in transformers 5.24).
MODEL_CLASSES = {
    "qwen2_5_vl": "Qwen2_5_VLForConditionalGeneration",
    "qwen2_vl": "Qwen2VLForConditionalGeneration",
    "qwen3_vl": "Qwen3VLForConditionalGeneration",
    "qwen3_vl_moe": "Qwen3VLMoeForConditionalGeneration",
}
CONFIG_CLASSES = {
    "qwen2_5_vl": "Qwen2_5_VLConfig",
    "qwen2_vl": "Qwen2VLConfig",
    "qwen3_vl": "Qwen3VLConfig",
    "qwen3_vl_moe": "Qwen3VLMoeConfig",
}
DTYPES = ("auto", "float32", "bfloat16", "float16")


def model_type(path) -> str:
    """The `model_type` of a local checkpoint directory; UserError when it is not a supported model."""
    p = Path(path)
    if not p.is_dir():
        raise UserError(f"model path {p} is not a directory")
    cfg_file = p / "config.json"
    if not cfg_file.is_file():
        raise UserError(f"{p} is not a model directory (no config.json)")
    try:
        mt = json.loads(cfg_file.read_text()).get("model_type")
    except (ValueError, AttributeError, RecursionError) as e:   # not JSON / UTF-8, not an object, 4300+ digits, too deep
        raise UserError(f"{cfg_file} is not valid JSON ({str(e).split(';')[0] or type(e).__name__})") from None
    if mt not in MODEL_CLASSES:
        raise UserError(f"{p}: model_type {mt!r} is not supported (supported: {', '.join(MODEL_CLASSES)})")
    return mt


def model_class(mt: str):
    import transformers
    cls = getattr(transformers, MODEL_CLASSES[mt], None)
    if cls is None:
        raise UserError(f"this transformers ({transformers.__version__}) has no {MODEL_CLASSES[mt]}")
    return cls


def config_class(mt: str):
    import transformers
    return getattr(transformers, CONFIG_CLASSES[mt])


def check_device(device: str) -> str:
    """`device` if this machine has it, else a one-line UserError (torch's own error for a missing
    GPU is a paragraph after a traceback, raised only once the weights are loaded)."""
    import torch
    try:
        d = torch.device(device)
    except (RuntimeError, TypeError):
        raise UserError(f"device must be cpu, cuda or cuda:N, not {device!r}") from None
    if d.type == "cuda":
        n = torch.cuda.device_count() if torch.cuda.is_available() else 0
        if n == 0:
            raise UserError(f"device {device}: this machine has no CUDA GPU (use --device cpu)")
        if d.index is not None and d.index >= n:
            raise UserError(f"device {device}: this machine has {n} CUDA GPU(s) (cuda:0 .. cuda:{n - 1})")
    elif d.type == "mps" and not torch.backends.mps.is_available():
        raise UserError(f"device {device}: MPS is not available on this machine")
    return device


def _torch_dtype(dtype: str, device: str):
    import torch
    if dtype not in DTYPES:
        raise UserError(f"dtype must be one of {', '.join(DTYPES)}, not {dtype!r}")
    if dtype == "auto":
        # bf16 halves memory on accelerators; on the CPU float32 is faster and exact.
        return torch.float32 if str(device).startswith("cpu") else torch.bfloat16
    return getattr(torch, dtype)


def load_processor(path):
    from transformers import AutoProcessor
    model_type(path)
    try:
        proc = AutoProcessor.from_pretrained(str(path))
    except (OSError, ValueError) as e:
        raise UserError(f"{path}: cannot load the processor ({str(e).splitlines()[0]})") from None
    # Batched generation appends tokens on the right: prompts must be left-padded.
    proc.tokenizer.padding_side = "left"
    return proc


def load_policy(path, dtype: str = "auto", device: str = "cpu", attn_implementation: str | None = None):
    """(model, processor) from a local checkpoint directory, model in eval mode on `device`."""
    mt = model_type(path)
    cls = model_class(mt)
    check_device(device)
    torch_dtype = _torch_dtype(dtype, device)
    processor = load_processor(path)
    kwargs = {"dtype": torch_dtype}
    if attn_implementation:
        kwargs["attn_implementation"] = attn_implementation
    from safetensors import SafetensorError
    try:
        model = cls.from_pretrained(str(path), **kwargs)
    # SafetensorError: a torn weights file; RuntimeError: weights or config.json sizes that do not fit
    except (OSError, ValueError, RuntimeError, TypeError, SafetensorError) as e:
        why = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        if "ignore_mismatched_sizes" in why:     # transformers' line points at a report printed above it
            why = "the weights' shapes do not match config.json"
        raise UserError(f"{path}: cannot load the model weights ({why})") from None
    model.to(device)
    model.eval()
    return model, processor


def param_bytes(model) -> int:
    """Bytes the parameters take (works on the meta device: nothing is allocated)."""
    return sum(p.numel() * p.element_size() for p in model.parameters())


def memory_estimate(model, seq_len: int, batch: int = 1, train: bool = False) -> dict:
    """Rough bytes for inference (weights + KV cache) or full fine-tuning with AdamW (weights,
    fp32 grads and two fp32 moments), from the config only; a planning aid, not a measurement."""
    cfg = getattr(model.config, "text_config", model.config)
    n_params = sum(p.numel() for p in model.parameters())
    w = param_bytes(model)
    elem = next(model.parameters()).element_size()
    head_dim = getattr(cfg, "head_dim", None) or cfg.hidden_size // cfg.num_attention_heads
    kv = 2 * cfg.num_hidden_layers * cfg.num_key_value_heads * head_dim * seq_len * batch * elem
    out = {"params": n_params, "weights_bytes": w, "kv_cache_bytes": kv, "total_bytes": w + kv}
    if train:
        opt = n_params * 4 * 3   # fp32 grads + Adam exp_avg + exp_avg_sq
        out["optimizer_bytes"] = opt
        out["total_bytes"] = w + kv + opt
    return out

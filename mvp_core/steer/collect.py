"""Read the residual stream entering every decoder layer at the last prompt token, in one forward pass.

A forward pre-hook on each decoder layer copies `hidden_states[:, -1]` (fp32). Prompts are batched
with LEFT padding, so position -1 is every row's last prompt token (after the chat template's
generation prompt). Once the last layer's input is read the forward is cut short (nothing after it
is needed), so collection costs less than one full forward per batch; the published code runs one
full forward per layer (bench/steer_collect.py compares them)."""
from __future__ import annotations

from collections.abc import Iterable

from mvp_core.errors import UserError
from mvp_core.steer.config import CollectConfig
from mvp_core.steer.layers import decoder_layers, hidden_from_call


class _Done(Exception):
    """Raised by the last layer's hook to stop the forward pass early."""


def chat_texts(tokenizer, prompts: list[str], system: str | None = None, enable_thinking: bool = False) -> list[str]:
    """Each prompt as one user turn, chat template applied, ending in the assistant's generation prompt
    (Qwen3's thinking off unless asked: mvp_core/model/prompt.py apply_template).
    A base model's tokenizer has no template: the prompt as written (after the system text, if any)."""
    from mvp_core.model.prompt import apply_template
    if tokenizer.chat_template is None:
        return [f"{system}\n\n{p}" if system else p for p in prompts]
    out = []
    for p in prompts:
        msgs = ([{"role": "system", "content": system}] if system else []) + [{"role": "user", "content": p}]
        out.append(apply_template(tokenizer, msgs, enable_thinking))
    return out


def text_batches(tokenizer, prompts: list[str], cfg: CollectConfig | None = None) -> Iterable[dict]:
    """Left-padded tokenizer outputs for `prompts`, `cfg.batch_size` at a time; with `cfg.max_length`,
    cut from the left, so every row keeps its end (the generation prompt, where the state is read)."""
    cfg = cfg or CollectConfig()
    tokenizer.padding_side = "left"
    texts = chat_texts(tokenizer, prompts, cfg.system, cfg.enable_thinking)
    for i in range(0, len(texts), cfg.batch_size):
        kw = {"truncation": True, "max_length": cfg.max_length} if cfg.max_length else {}
        side = tokenizer.truncation_side
        tokenizer.truncation_side = "left"
        try:
            # a template writes its own special tokens; raw text gets the tokenizer's (e.g. a BOS)
            enc = tokenizer(texts[i:i + cfg.batch_size], return_tensors="pt", padding=True,
                            add_special_tokens=tokenizer.chat_template is None, **kw)
        finally:
            tokenizer.truncation_side = side   # the tokenizer may be shared with code that wants its own
        yield enc


def puzzle_batches(processor, puzzles: list, load_frame, pcfg=None, batch_size: int = 4) -> Iterable[dict]:
    """Processor outputs (images included) for puzzles, left-padded, `batch_size` at a time."""
    from mvp_core.model.prompt import build_inputs
    processor.tokenizer.padding_side = "left"
    for i in range(0, len(puzzles), batch_size):
        yield build_inputs(processor, list(puzzles[i:i + batch_size]), load_frame, pcfg)


def _check_left_padded(inputs) -> None:
    mask = inputs.get("attention_mask")
    if mask is not None and not bool(mask[:, -1].all()):
        raise UserError("prompts must be left-padded: position -1 is padding in some row")


def collect_batch(model, inputs, layers: list[int] | None = None):
    """[batch, len(layers), hidden] fp32 states entering each layer in `layers` (default: all)."""
    import torch
    mods = decoder_layers(model)
    idx = list(range(len(mods))) if layers is None else sorted(layers)
    _check_left_padded(inputs)
    got: dict[int, torch.Tensor] = {}
    last = idx[-1]

    def make_hook(i):
        def hook(_mod, args, kwargs):
            got[i] = hidden_from_call(args, kwargs)[:, -1, :].detach().float().cpu()
            if i == last:
                raise _Done
        return hook
    handles = [mods[i].register_forward_pre_hook(make_hook(i), with_kwargs=True) for i in idx]
    try:
        with torch.inference_mode():
            model(**inputs.to(model.device), use_cache=False)
    except _Done:
        pass
    finally:
        for h in handles:
            h.remove()
    return torch.stack([got[i] for i in idx], dim=1)


def collect_states(model, batches: Iterable[dict], layers: list[int] | None = None, total: int | None = None,
                   progress: bool = False):
    """States for every prompt in `batches`: [n_prompts, n_layers, hidden] fp32 (one pass per batch)."""
    import torch
    from tqdm import tqdm
    out = []
    bar = tqdm(total=total, desc="collect", unit="prompt", disable=not progress)
    for inputs in batches:
        s = collect_batch(model, inputs, layers)
        out.append(s)
        bar.update(s.shape[0])
    bar.close()
    if not out:
        raise UserError("no prompts to collect states from")
    return torch.cat(out, dim=0)

"""Refusal-use evaluation: greedy answers with and without steering, judged by the refusal judge.

Decoding goes through the one generate path (mvp_core/model/sampler.py) with an explicit greedy
GenerationConfig: a checkpoint's generation_config (Qwen Instruct ships repetition_penalty 1.05)
would otherwise change which answers count as refusals."""
from __future__ import annotations

import contextlib

from mvp_core.steer.collect import text_batches
from mvp_core.steer.config import CollectConfig


def generate_answers(model, tok, prompts: list[str], max_new_tokens: int = 16, batch_size: int = 32,
                     steering=None, progress: bool = False, desc: str = "generate",
                     enable_thinking: bool = False) -> list[str]:
    """Greedy answers (left-padded batches); `steering`: a Steering to use, or None for the plain model;
    `enable_thinking`: Qwen3's thinking switch (CollectConfig.enable_thinking)."""
    import torch
    from tqdm import tqdm

    from mvp_core.model.sampler import SamplerSettings, sample
    greedy = SamplerSettings(do_sample=False, max_new_tokens=max_new_tokens)
    out = []
    bar = tqdm(total=len(prompts), desc=desc, unit="prompt", disable=not progress)
    with steering if steering is not None else contextlib.nullcontext():
        for batch in text_batches(tok, prompts, CollectConfig(batch_size=batch_size, enable_thinking=enable_thinking)):
            with torch.inference_mode():
                gen = sample(model, batch.to(model.device), greedy)
            out += tok.batch_decode(gen[:, batch["input_ids"].shape[1]:], skip_special_tokens=True)
            bar.update(len(gen))
    bar.close()
    return out


def refusal_rate(answers: list[str], judge) -> float:
    return sum(map(judge, answers)) / len(answers) if answers else 0.0

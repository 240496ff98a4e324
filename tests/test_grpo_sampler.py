"""The sampler is the policy: a checkpoint whose generation_config.json asks for
repetition_penalty 1.05 and top_k 1 (as Qwen-VL Instruct checkpoints ship near-greedy settings)
is sampled by the trainer exactly as its training forward scores it."""
from __future__ import annotations

import pytest
import torch

from mvp_core.train import batching
from mvp_core.train import distributed as D
from mvp_core.train.config import load_config
from mvp_core.train.data import PuzzleSet
from mvp_core.train.loop import StepContext, completion_logps, generate
from mvp_core.train.model_setup import load_model
from mvp_core.model.sampler import SamplerSettings, sample

G, TEMPERATURE = 4, 0.7


@pytest.fixture(scope="module")
def greedy_checkpoint(tmp_path_factory):
    from transformers import GenerationConfig

    from mvp_core.model.tiny import build_tiny_model
    d = build_tiny_model(tmp_path_factory.mktemp("ckpt") / "m", seed=1)
    from mvp_core.model.policy import load_policy
    model, _ = load_policy(d)
    gc = model.generation_config
    model.generation_config = GenerationConfig(
        eos_token_id=gc.eos_token_id, pad_token_id=gc.pad_token_id, bos_token_id=gc.bos_token_id,
        do_sample=True, repetition_penalty=1.05, top_k=1, top_p=0.001, temperature=0.1)
    model.save_pretrained(d)
    assert '"repetition_penalty": 1.05' in (d / "generation_config.json").read_text()
    return d


def _context(greedy_checkpoint, model_data, tmp_path):
    data, _ = model_data
    cfg = load_config(None, [f"model={greedy_checkpoint}", f"puzzles={data / 'puzzles.jsonl'}",
                             f"output_dir={tmp_path}", f"num_generations={G}", f"per_device_train_batch_size={G}",
                             "max_completion_length=12", "max_pixels=3136", f"temperature={TEMPERATURE}"])
    info = D.init_distributed()
    model, processor = load_model(cfg, info.device)
    tok = processor.tokenizer
    eos = frozenset({tok.eos_token_id})
    ctx = StepContext(cfg, info, model, model, None, processor, eos, tok.pad_token_id, False)
    encs = [PuzzleSet.open(cfg).encode(model_data[1][0], processor)] * G
    return ctx, encs


def _sampler_logps(scores, completions, eos) -> torch.Tensor:
    """log p(sampled token) under the distribution generate drew it from (processed scores)."""
    width = max(c.numel() for c in completions)
    out = torch.zeros(len(completions), width)
    for t in range(width):
        lp = torch.log_softmax(scores[t].float(), dim=-1)
        for i, c in enumerate(completions):
            if t < c.numel():
                out[i, t] = lp[i, c[t]]
    return out


def test_sampled_logprobs_equal_training_forward(greedy_checkpoint, model_data, tmp_path, torch_one_thread):
    ctx, encs = _context(greedy_checkpoint, model_data, tmp_path)
    torch.manual_seed(7)
    completions = generate(ctx, encs)                      # the trainer's own generate step
    assert sum(c.numel() for c in completions) > G        # real completions, not just eos

    # The same call the trainer makes, again from the same seed, now with the processed scores.
    batch = batching.collate(encs, None, ctx.pad_id, ctx.info.device)
    batch.pop("completion_mask")
    prompt_len = batch.pop("prompt_len")
    torch.manual_seed(7)
    with torch.no_grad():
        out = sample(ctx.model, batch, SamplerSettings.from_config(ctx.cfg), pad_token_id=ctx.pad_id,
                     use_cache=True, output_scores=True, return_dict_in_generate=True)
    again = [batching.trim_completion(r[prompt_len:], ctx.eos_ids) for r in out.sequences]
    assert all(torch.equal(a, b) for a, b in zip(completions, again))
    sampler = _sampler_logps(out.scores, completions, ctx.eos_ids)

    with torch.no_grad():                                  # the trainer's forward (prompt run once: shared_prompt.py)
        trained, _, mask = completion_logps(ctx, ctx.model, encs, completions)
    mask = mask.bool()
    assert torch.allclose(sampler[mask], trained[mask], atol=1e-4), (sampler[mask] - trained[mask]).abs().max()
    # the samples are not near-greedy: the checkpoint's top_k=1 / temperature 0.1 did not apply
    assert (trained[mask] < -0.5).any()
    assert len({tuple(c.tolist()) for c in completions}) > 1

    # Control: a plain generate call inherits the file's settings, and its distribution is not the
    # one the training forward scores (this is what the test would catch in the trainer).
    torch.manual_seed(7)
    with torch.no_grad():
        plain = ctx.model.generate(**batch, max_new_tokens=12, temperature=TEMPERATURE, output_scores=True,
                                   return_dict_in_generate=True, pad_token_id=ctx.pad_id)
    plain_c = [batching.trim_completion(r[prompt_len:], ctx.eos_ids) for r in plain.sequences]
    plain_lp = _sampler_logps(plain.scores, plain_c, ctx.eos_ids)
    with torch.no_grad():
        plain_trained, _, pm = completion_logps(ctx, ctx.model, encs, plain_c)
    pm = pm.bool()
    assert (plain_lp[pm] - plain_trained[pm]).abs().max() > 0.1


def test_rollout_defaults_match_training():
    """`mvp rollout` / `mvp eval` build the same sampler settings a default run trains with."""
    from mvp_core.train.config import GRPOConfig
    from mvp_core.model.rollout import GenConfig
    train = SamplerSettings.from_config(GRPOConfig())
    roll = GenConfig(max_new_tokens=GRPOConfig().max_completion_length).sampler()
    assert roll == train and train.is_exact_policy()

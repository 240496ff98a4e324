"""A lean sampling loop for GRPO's rollout: from a prefilled cache, one forward per new token,
softmax(logits / temperature) with the vision placeholders suppressed, and nothing else.

Why hand-written rather than transformers' `generate`: on the bench's small policy a decode step
spends about as long in generate's own machinery (its per-step input preparation, the
logits-processor and stopping-criteria lists, the signature checks) as in the model's forward
(docs/grpo.md, "Where a step's time goes"). This loop makes the same forward calls generate makes
(the same ids, positions, attention mask and cache), applies the same two processors in the same
order (the placeholders' logits set to -inf, then the temperature) and draws with the same
`torch.multinomial`, so for the same random state it picks the same tokens
(tests/test_shared_prompt.py checks it against `sampler.sample`). It covers only settings it
reproduces exactly (`supports`): sampling at a temperature or greedy decoding, with top_k, top_p,
min_p and the repetition penalty off, the training defaults; anything else goes to generate.
It runs under `torch.inference_mode` rather than `no_grad` (no version counters or view tracking on the
cache it grows): the bench's decode step was ~10% faster (docs/grpo.md), the tokens are the same."""
from __future__ import annotations

import torch

from mvp_core.model.kv_room import with_room
from mvp_core.model.lean_step import LeanStep
from mvp_core.model.sampler import SamplerSettings, placeholder_token_ids, sample, token_ids
from mvp_core.model.vl_parts import rope_owner
from mvp_core.train.shared_prompt import prefill_repeated


def supports(s: SamplerSettings) -> bool:
    """Whether this loop draws exactly what `sampler.sample` would under `s`."""
    return s.is_exact_policy()


def sample_each(model, inputs: dict, s: SamplerSettings, n: int) -> torch.Tensor:
    """n sampled completions of each prompt in `inputs` (processor outputs, left-padded), rows
    [p0 x n, p1 x n, ...], as generate(num_return_sequences=n) gives them after the prompt (padded
    after each row's end token), for rollouts and evaluation. Each prompt is prefilled once and its
    cache repeated n times (generate runs the prompt's tokens once per returned sequence), then this
    loop draws; where the loop cannot reproduce `s`, or the model has no 3-D positions or
    no pad token, generate itself."""
    ids = token_ids(model)
    eos = ids["eos_token_id"] if isinstance(ids["eos_token_id"], list) else [ids["eos_token_id"]]
    eos, pad = frozenset(int(e) for e in eos if e is not None), ids["pad_token_id"]
    if supports(s) and eos and pad is not None:
        rows = inputs["input_ids"].shape[0]
        pre = prefill_repeated(model, dict(inputs), [n] * rows)
        if pre is not None:
            return sample_from_prefill(model, pre[0], rope_owner(model).rope_deltas, s, int(pad), eos)
    return sample(model, inputs, s, num_return_sequences=n)[:, inputs["input_ids"].shape[1]:]


@torch.inference_mode()
def sample_from_prefill(model, batch: dict, rope_deltas: torch.Tensor, s: SamplerSettings, pad_id: int,
                        eos_ids: frozenset, first_scores: torch.Tensor | None = None) -> torch.Tensor:
    """The sampled tokens (B, T), T <= s.max_new_tokens, rows that ended padded with `pad_id` after
    their end token, as generate's output after the prompt. `batch` holds the whole left-padded
    prompts (`input_ids`, `attention_mask`) and a `cache` of all but their last token;
    `rope_deltas` (B, 1) the multimodal position offsets the prefill computed. With `first_scores`
    (B, V), the next-token logits at the prompts' last position, the cache holds the whole prompts
    and the first token is drawn from those logits (the step's prompt pass, shared_prompt.PromptPass)."""
    if not supports(s):
        raise ValueError(f"decode.sample_from_prefill cannot reproduce {', '.join(s.off_policy_settings())}")
    ids, mask = batch["input_ids"], batch["attention_mask"]
    cache = with_room(batch["cache"], s.max_new_tokens)     # each step writes in place (kv_room.py)
    B, device = ids.shape[0], ids.device
    # generate leaves the mask out when nothing is padded (and so must this loop, to compute the same
    # attention); its positions are the prompt's text positions plus the stored deltas, +1 per token
    keep_mask = not bool(mask.all())
    position = (mask.long().sum(-1, keepdim=True) - 1 + rope_deltas.to(device)).unsqueeze(0)     # (1, B, 1)
    blocked = placeholder_token_ids(model)
    suppress = torch.zeros(_vocab_size(model), dtype=torch.bool, device=device)
    suppress[blocked] = True
    eos = torch.tensor(sorted(eos_ids), device=device)
    unfinished = torch.ones(B, dtype=torch.long, device=device)
    step_ids = ids[:, -1:]
    forward = _text_forward(model)
    out = []
    for i in range(s.max_new_tokens):
        if i == 0 and first_scores is not None:
            scores = first_scores
        else:
            scores = forward(step_ids, mask if keep_mask else None, position, cache)
        scores = scores.to(dtype=torch.float32, copy=True)
        scores = torch.where(suppress[:scores.shape[-1]], -float("inf"), scores)
        if s.do_sample:
            if s.temperature != 1.0:
                scores = scores / s.temperature
            nxt = torch.multinomial(torch.softmax(scores, dim=-1), num_samples=1).squeeze(1)
        else:
            nxt = torch.argmax(scores, dim=-1)
        nxt = nxt * unfinished + pad_id * (1 - unfinished)
        out.append(nxt)
        unfinished = unfinished & ~torch.isin(nxt, eos)
        if not bool(unfinished.any()):
            break
        step_ids = nxt[:, None]
        position = position + 1
        if keep_mask:
            mask = torch.cat([mask, mask.new_ones((B, 1))], dim=-1)
    return torch.stack(out, dim=1)


def _text_forward(model):
    """`f(ids, mask, positions, cache)` -> the next-token logits (B, V): the multimodal model's
    forward for a text-only step, which embeds the ids, runs its language model and the head on
    the last position. Called on those parts directly where the model exposes them (the Qwen-VL
    families): the wrapper's multimodal bookkeeping is a fifth of a small policy's decode step, and
    the decoder modules' own wrappers a sixth of the rest (lean_step.py)."""
    owner = rope_owner(model)
    lm = getattr(owner, "language_model", None)
    head = model.get_output_embeddings()
    if lm is None or head is None:
        def whole(ids, mask, positions, cache):
            return model(input_ids=ids, attention_mask=mask, position_ids=positions, cache=cache, use_cache=True,
                         logits_to_keep=1).logits[:, -1]
        return whole
    embed = owner.get_input_embeddings()
    step_mask = _StepMask(lm)
    lean = LeanStep(lm)

    def parts(ids, mask, positions, cache):
        embeds = embed(ids)
        step = step_mask(mask, embeds, cache)
        hidden = lean(embeds, step, positions, cache,
                      lambda: lm(input_ids=None, inputs_embeds=embeds, attention_mask=step, position_ids=positions,
                                 cache=cache, use_cache=True).last_hidden_state)
        return head(hidden[:, -1:, :])[:, -1]
    return parts


class _StepMask:
    """The attention mask of a one-token step over the cache, handed to the language model ready-made.

    With left-padded prompts transformers builds it each step from the 2-D padding mask through its mask
    functions, about a tenth of the tiny policy's padded decode (docs/grpo.md); under SDPA it is
    the padding mask as a (B, 1, 1, cache length) boolean, which one indexing op gives, and a ready 4-D
    mask is used as it is. The first step checks that transformers' own `create_causal_mask` gives this
    very tensor for this model (its attention implementation, its layers' kinds), so SDPA sees the same
    inputs and the tokens stay the same; where it does not, every step keeps the 2-D mask."""

    def __init__(self, lm):
        self.lm = lm
        self.same = None                # unknown until the first padded step

    def __call__(self, mask: torch.Tensor | None, embeds: torch.Tensor, cache):
        if mask is None or self.same is False:
            return mask
        ready = mask.bool()[:, None, None, :]
        if self.same is None:
            self.same = self._transformers_builds(ready, mask, embeds, cache)
        return ready if self.same else mask

    def _transformers_builds(self, ready, mask, embeds, cache) -> bool:
        if getattr(self.lm, "has_sliding_layers", False):
            return False
        try:
            from transformers.masking_utils import create_causal_mask
            theirs = create_causal_mask(config=self.lm.config, inputs_embeds=embeds, attention_mask=mask, cache=cache,
                                        position_ids=None)
        except (ImportError, TypeError):         # a transformers whose mask function is called otherwise
            return False
        return isinstance(theirs, torch.Tensor) and theirs.dtype == ready.dtype and theirs.shape == ready.shape \
            and bool(torch.equal(theirs, ready))


def _vocab_size(model) -> int:
    cfg = model.config
    return int(getattr(getattr(cfg, "text_config", cfg), "vocab_size"))

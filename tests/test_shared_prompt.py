"""One prompt forward per group (mvp_core/train/shared_prompt.py) gives the plain forward's
log-probs and gradient: every Qwen-VL family, frames as images and as one video, groups cut by
the micro-batch, completions of different lengths with and without an eos, LoRA adapters, and
the trainer's own `completion_logps`."""
from __future__ import annotations

import copy

import pytest
import torch

from mvp_core.model import vl_parts
from mvp_core.train import batching, shared_prompt
from mvp_core.train.config import load_config
from mvp_core.train.data import PuzzleSet


def _policy(tmp_path, family: str):
    from mvp_core.model.policy import load_policy
    from mvp_core.model.tiny import build_tiny_model
    d = build_tiny_model(tmp_path / family, seed=3, family=family)
    model, processor = load_policy(d, dtype="float32")
    model.train()
    return d, model, processor


def _sequences(model_data, tmp_path, model_dir, processor, video_mode: bool, group: int = 4):
    """Puzzles' encodings each repeated `group` times, the last group cut short (a micro-batch
    boundary), and completions of random tokens, some ending in eos."""
    data, recs = model_data
    cfg = load_config(None, [f"model={model_dir}", f"puzzles={data / 'puzzles.jsonl'}", f"output_dir={tmp_path}",
                             "max_pixels=3136", f"video_mode={str(video_mode).lower()}"])
    ps = PuzzleSet.open(cfg)
    encs = [ps.encode(r, processor) for r in (recs[0], _one_frame_fewer(recs[1]), recs[2])]
    assert len({int(e["input_ids"].shape[-1]) for e in encs}) > 1      # prompts of different lengths: left padding
    seqs = [e for e in encs for _ in range(group)][:-1]
    tok = processor.tokenizer
    g = torch.Generator().manual_seed(5)
    comps = []
    for i in range(len(seqs)):
        c = torch.randint(10, 250, (int(torch.randint(3, 20, (), generator=g)),), generator=g)
        if i % 3 == 0:
            c[-1] = tok.eos_token_id
        comps.append(c)
    return seqs, comps, tok.pad_token_id, frozenset({tok.eos_token_id})


def _one_frame_fewer(rec: dict) -> dict:
    """The same puzzle shown with one context frame fewer (a shorter prompt), under a new id."""
    r = copy.deepcopy(rec)
    r["id"] += "-short"
    m = r["mask"]
    if m["start"] + m["length"] < len(r["frames"]):
        r["frames"] = r["frames"][:-1]
    else:
        r["frames"], m["start"] = r["frames"][1:], m["start"] - 1
    return r


def _plain(model, seqs, comps, pad, eos):
    b = batching.collate(seqs, comps, pad, torch.device("cpu"), eos)
    n = b["completion_mask"].shape[1]
    inputs = {k: v for k, v in b.items() if k not in ("completion_mask", "prompt_len")}
    return model(**inputs, logits_to_keep=n + 1, use_cache=False).logits[:, :-1], b


def _shared(model, seqs, comps, pad, eos):
    return shared_prompt.completion_logits(model, seqs, comps, pad, torch.device("cpu"), eos)


def _logps_and_grad(model, fn, seqs, comps, pad, eos):
    model.zero_grad(set_to_none=True)
    logits, b = fn(model, seqs, comps, pad, eos)
    mask = b["completion_mask"].float()
    ids = b["input_ids"][:, -logits.shape[1]:]
    lp = torch.log_softmax(logits.float(), -1).gather(-1, ids.unsqueeze(-1)).squeeze(-1) * mask
    # an advantage-like weight per sequence, so the rows' gradients do not simply add up
    w = torch.linspace(-1.0, 1.0, lp.shape[0]).unsqueeze(1)
    (lp * w).sum().backward()
    grads = torch.cat([p.grad.flatten() for p in model.parameters() if p.grad is not None])
    return lp.detach(), grads


@pytest.mark.parametrize("family,video_mode", [("qwen2_5_vl", False), ("qwen2_5_vl", True), ("qwen2_vl", False),
                                               ("qwen3_vl", False), ("qwen3_vl", True)])
def test_shared_prompt_equals_plain_forward(family, video_mode, model_data, tmp_path, torch_one_thread):
    model_dir, model, processor = _policy(tmp_path, family)
    seqs, comps, pad, eos = _sequences(model_data, tmp_path, model_dir, processor, video_mode)
    assert shared_prompt.runs_of_same_prompt(seqs) == [4, 4, 3]
    lp_plain, g_plain = _logps_and_grad(model, _plain, seqs, comps, pad, eos)
    lp_shared, g_shared = _logps_and_grad(model, _shared, seqs, comps, pad, eos)
    assert lp_plain.shape == lp_shared.shape
    assert (lp_plain != 0).sum() > 20                                  # real completions scored
    assert torch.allclose(lp_plain, lp_shared, atol=1e-4), (lp_plain - lp_shared).abs().max()
    assert g_plain.shape == g_shared.shape and g_plain.norm() > 0
    assert ((g_plain - g_shared).norm() / g_plain.norm()) < 1e-4


def test_shared_prompt_with_lora(model_data, tmp_path, torch_one_thread):
    from peft import LoraConfig, get_peft_model
    model_dir, model, processor = _policy(tmp_path, "qwen2_5_vl")
    model = get_peft_model(model, LoraConfig(r=4, lora_alpha=8, target_modules=["q_proj", "v_proj"],
                                             init_lora_weights=False))
    model.train()
    seqs, comps, pad, eos = _sequences(model_data, tmp_path, model_dir, processor, False)
    lp_plain, g_plain = _logps_and_grad(model, _plain, seqs, comps, pad, eos)
    lp_shared, g_shared = _logps_and_grad(model, _shared, seqs, comps, pad, eos)
    assert torch.allclose(lp_plain, lp_shared, atol=1e-4)
    assert g_plain.numel() < sum(p.numel() for p in model.parameters()) / 2     # only the adapters train
    assert ((g_plain - g_shared).norm() / g_plain.norm()) < 1e-4


def test_a_prompt_differing_only_by_identity_is_not_merged(model_data, tmp_path, torch_one_thread):
    """Sharing is decided by the encoding object the rollout repeats; equal copies of a prompt
    are still run separately (and give the same numbers)."""
    model_dir, model, processor = _policy(tmp_path, "qwen2_5_vl")
    seqs, comps, pad, eos = _sequences(model_data, tmp_path, model_dir, processor, False)
    copies = [dict(e) for e in seqs]
    assert shared_prompt.runs_of_same_prompt(copies) == [1] * len(seqs)
    with torch.no_grad():
        a, _ = _shared(model, seqs, comps, pad, eos)
        b, _ = _shared(model, copies, comps, pad, eos)
    assert torch.allclose(a, b, atol=1e-4)


@pytest.mark.parametrize("family,video_mode", [("qwen2_5_vl", False), ("qwen2_vl", False), ("qwen3_vl", True)])
def test_prefilled_generate_equals_plain_generate(family, video_mode, model_data, tmp_path, torch_one_thread):
    """Generation from the shared prefill (each prompt run once, its cache repeated) picks the
    same greedy tokens, and gives the same step scores, as generation from scratch."""
    from mvp_core.model.sampler import SamplerSettings, sample
    model_dir, model, processor = _policy(tmp_path, family)
    model.eval()
    seqs, _, pad, _ = _sequences(model_data, tmp_path, model_dir, processor, video_mode)
    plain = batching.collate(seqs, None, pad, torch.device("cpu"))
    P = plain.pop("prompt_len")
    plain.pop("completion_mask")
    s = SamplerSettings(do_sample=False, max_new_tokens=10)
    with torch.no_grad():
        a = sample(model, plain, s, use_cache=True, pad_token_id=pad, output_scores=True, return_dict_in_generate=True)
        pre = shared_prompt.prefill_for_generate(model, seqs, pad, torch.device("cpu"))
        assert pre is not None and pre["cache"].get_seq_length() == P - 1
        b = sample(model, pre, s, use_cache=True, pad_token_id=pad, output_scores=True, return_dict_in_generate=True)
    assert torch.equal(a.sequences[:, P:], b.sequences[:, P:])
    assert len({tuple(r.tolist()) for r in a.sequences[:, P:]}) > 1          # the prompts' answers differ
    for sa, sb in zip(a.scores, b.scores):
        finite = torch.isfinite(sa)
        assert torch.allclose(sa[finite], sb[finite], atol=1e-4)


@pytest.mark.parametrize("family,video_mode,share,attention", [
    ("qwen2_5_vl", False, True, "sdpa"), ("qwen2_5_vl", False, False, "sdpa"), ("qwen2_vl", False, True, "sdpa"),
    ("qwen3_vl", True, True, "sdpa"), ("qwen2_5_vl", False, True, "eager")])
def test_lean_decode_draws_what_generate_draws(family, video_mode, share, attention, model_data, tmp_path,
                                               torch_one_thread):
    """The rollout's own decode loop (mvp_core/model/decode.py) from the prefill picks the very
    tokens generate picks from the same prefill and random state: sampling at temperature 1 and
    0.7 and greedy, left-padded prompts, rows that stop at an end token padded after it. Under SDPA
    it hands the model its one-token steps' mask ready-made; under eager attention (whose mask is
    another tensor) it keeps the padding mask. Its cache has room for the new tokens (no copy a step), and
    its decoder layers run as plain calls where they match the model's own forward."""
    from mvp_core.model import decode, lean_step
    from mvp_core.model.kv_room import RoomyLayer
    from mvp_core.model.sampler import SamplerSettings, sample
    model_dir, model, processor = _policy(tmp_path, family)
    model.set_attn_implementation(attention)
    model.eval()
    lm = vl_parts.rope_owner(model).language_model
    with torch.no_grad():                                   # a cache of two tokens, the first row's a pad
        cache = lm(input_ids=torch.tensor([[5, 6], [7, 8]]), attention_mask=torch.tensor([[0, 1], [1, 1]]),
                   use_cache=True).cache
    step_mask = decode._StepMask(lm)
    made = step_mask(torch.tensor([[0, 1, 1], [1, 1, 1]]), lm.embed_tokens(torch.tensor([[9], [9]])), cache)
    assert made.shape == ((2, 1, 1, 3) if attention == "sdpa" else (2, 3)) and step_mask.same == (attention == "sdpa")
    seqs, _, pad, _ = _sequences(model_data, tmp_path, model_dir, processor, video_mode)
    owner = vl_parts.rope_owner(model)

    def both(s, eos):
        with torch.no_grad():
            pre = shared_prompt.prefill_for_generate(model, seqs, pad, torch.device("cpu"), share=share)
            P = pre["input_ids"].shape[1]
            torch.manual_seed(11)
            a = sample(model, pre, s, use_cache=True, pad_token_id=pad, eos_token_id=sorted(eos))[:, P:]
            pre = shared_prompt.prefill_for_generate(model, seqs, pad, torch.device("cpu"), share=share)
            torch.manual_seed(11)
            b = decode.sample_from_prefill(model, pre, owner.rope_deltas, s, pad, frozenset(eos))
        # the loop wrote each step into the room made for it, in place (mvp_core/model/kv_room.py)
        assert all(isinstance(layer, RoomyLayer) for layer in pre["cache"].layers)
        return a, b

    free, _ = both(SamplerSettings(max_new_tokens=12), {pad})
    # end tokens some rows draw early and others never: rows of different lengths
    eos = {int(free[0, 2]), int(free[-1, 5])}
    for s in (SamplerSettings(max_new_tokens=12), SamplerSettings(temperature=0.7, max_new_tokens=12),
              SamplerSettings(do_sample=False, max_new_tokens=12)):
        a, b = both(s, eos)
        assert torch.equal(a, b), (s, a, b)
    # the decoder layers ran as plain calls where the first step matched the model's own forward bit for bit
    # (lean_step.py): the Qwen2 layer shape under SDPA; Qwen3-VL's query/key norms and eager attention keep it
    lean = (family, attention) in {("qwen2_5_vl", "sdpa"), ("qwen2_vl", "sdpa")}
    assert lean_step.LAST_CHECK.get(lm) is (True if lean else None)
    a, _ = both(SamplerSettings(max_new_tokens=12), eos)
    ended = [any(int(t) in eos for t in row[:-1]) for row in a]
    assert any(ended) and not all(ended) and len({tuple(r.tolist()) for r in a}) > 1
    with pytest.raises(ValueError, match="top_k"):
        decode.sample_from_prefill(model, {}, owner.rope_deltas, SamplerSettings(top_k=5), pad, eos)


def test_sharing_is_chosen_where_it_saves_enough_prompt_tokens():
    """The measured rule (shared_prompt.pays): a micro-batch shares when the prompt tokens it would
    not run again reach SHARE_MIN_SAVED_TOKENS; one that repeats no prompt, or only a short one,
    runs whole."""
    def enc(n):
        return {"input_ids": torch.ones((1, n), dtype=torch.long)}
    long_prompt, short_prompt, other = enc(103), enc(20), enc(90)
    k = shared_prompt.SHARE_MIN_SAVED_TOKENS
    assert shared_prompt.saved_prompt_tokens([long_prompt, long_prompt, other, other]) == 2 * 103
    assert shared_prompt.pays([long_prompt, long_prompt])
    assert not shared_prompt.pays([long_prompt, other])                 # a cut group: nothing repeated
    assert not shared_prompt.pays([short_prompt, short_prompt])         # 20 tokens saved
    assert shared_prompt.pays([enc(k)] * 2) and not shared_prompt.pays([enc(k - 1)] * 2)


@pytest.mark.parametrize("family,video_mode", [("qwen2_5_vl", False), ("qwen2_vl", False), ("qwen3_vl", True)])
def test_frozen_vision_features_of_the_prefill_give_bit_equal_logps(family, video_mode, model_data, tmp_path,
                                                                     torch_one_thread):
    """With the vision tower frozen, the log-prob forward takes the rollout prefill's features of the
    same prompts instead of running the tower again: the tower runs once, and the log-probs and the
    gradient are bit-equal to running it again."""
    from mvp_core.train.model_setup import find_visual
    model_dir, model, processor = _policy(tmp_path, family)
    visual = find_visual(model)
    visual.requires_grad_(False)
    seqs, comps, pad, eos = _sequences(model_data, tmp_path, model_dir, processor, video_mode)
    calls = []
    visual.register_forward_hook(lambda *a: calls.append(1))
    kept: list = []
    model.eval()
    with torch.no_grad():
        shared_prompt.prefill_for_generate(model, seqs, pad, torch.device("cpu"), vision_out=kept)
    model.train()
    per_run = len(calls)                    # the tower's calls for the prompts (Qwen3-VL's video: 2)
    assert per_run >= 1 and len(kept) == 1

    def reused(m, s, c, p, e):
        return shared_prompt.completion_logits(m, s, c, p, torch.device("cpu"), e, vision=kept[0])
    lp_again, g_again = _logps_and_grad(model, _shared, seqs, comps, pad, eos)
    assert len(calls) == 2 * per_run
    lp_reused, g_reused = _logps_and_grad(model, reused, seqs, comps, pad, eos)
    assert len(calls) == 2 * per_run                                   # the tower did not run again
    assert torch.equal(lp_again, lp_reused) and torch.equal(g_again, g_reused) and g_again.norm() > 0
    # other prompts than the prefill's (a micro-batch cutting the step): the tower runs for them
    with torch.no_grad():
        reused(model, seqs[:5], comps[:5], pad, eos)
    assert len(calls) > 2 * per_run


@pytest.mark.parametrize("family,video_mode", [("qwen2_5_vl", False), ("qwen3_vl", True)])
def test_one_prompt_pass_serves_the_decode_and_the_loss(family, video_mode, model_data, tmp_path, torch_one_thread):
    """The step's prompt forward with gradient (shared_prompt.PromptPass) serves both halves of a GRPO step:
    the decode loop samples from its detached cache and last logits (greedy here: each drawn token is the
    loss's own argmax at its position), its own cache is left as it was, and the loss that takes it has
    the log-probs and gradient of running the prompts again, bit for bit. It is taken once, and only for
    the very sequences it ran."""
    from mvp_core.model import decode
    from mvp_core.model.sampler import SamplerSettings, placeholder_token_ids
    model_dir, model, processor = _policy(tmp_path, family)
    seqs, _, pad, _ = _sequences(model_data, tmp_path, model_dir, processor, video_mode)
    eos = frozenset({processor.tokenizer.eos_token_id})
    one = shared_prompt.prompt_pass(model, seqs, pad, torch.device("cpu"))
    P = one.prompts["input_ids"].shape[1]
    rows, first, deltas = one.decode_inputs(10)
    assert rows["input_ids"].shape[0] == len(seqs) and first.shape[0] == len(seqs)
    with torch.no_grad():
        new = decode.sample_from_prefill(model, rows, deltas, SamplerSettings(do_sample=False, max_new_tokens=10), pad,
                                         eos, first_scores=first)
    assert all(layer.keys.shape[-2] == P and layer.keys.requires_grad for layer in one.head.cache.layers)
    comps = [batching.trim_completion(row, eos) for row in new]
    assert len({int(c.numel()) for c in comps}) >= 1 and all(c.numel() for c in comps)
    with torch.no_grad():                  # greedy: every drawn token is the loss's argmax at its position
        logits, b = _shared(model, seqs, comps, pad, eos)
        logits[..., placeholder_token_ids(model)] = float("-inf")
        ids, mask = b["input_ids"][:, -logits.shape[1]:], b["completion_mask"].bool()
        assert torch.equal(logits.argmax(-1)[mask], ids[mask])

    def taken(m, s, c, p, e):
        return shared_prompt.completion_logits(m, s, c, p, torch.device("cpu"), e, prompt_pass=one)
    lp_taken, g_taken = _logps_and_grad(model, taken, seqs, comps, pad, eos)
    assert one.head is None                                            # taken once
    lp_again, g_again = _logps_and_grad(model, _shared, seqs, comps, pad, eos)
    assert torch.equal(lp_taken, lp_again) and torch.equal(g_taken, g_again) and g_again.norm() > 0
    # other sequences than the pass's (a micro-batch cutting the step): the loss runs its own prompts
    other = shared_prompt.prompt_pass(model, seqs, pad, torch.device("cpu"))
    lp_cut, _ = _logps_and_grad(model, lambda m, s, c, p, e: shared_prompt.completion_logits(
        m, s, c, p, torch.device("cpu"), e, prompt_pass=other), seqs[:5], comps[:5], pad, eos)
    assert other.head is not None and torch.allclose(lp_cut, lp_again[:5, :lp_cut.shape[1]], atol=1e-4)

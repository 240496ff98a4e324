"""Steering's prompts and decoding: refusal answers are decoded greedily with an
explicit GenerationConfig, nothing inherited from the checkpoint's generation_config; a prompt cut to
CollectConfig.max_length keeps its END (the assistant turn marker, where the state is read)."""
from __future__ import annotations

import pytest
import torch
from fixtures_model import tiny_causal_lm

from mvp_core.steer.collect import text_batches
from mvp_core.steer.config import CollectConfig
from mvp_core.steer.evaluate import generate_answers

PROMPTS = ["What is happening in this video?", "Frame 3: the rabbit walks in a green forest",
           "People ride bikes"]


@pytest.fixture(scope="module")
def lm(torch_one_thread):
    return tiny_causal_lm(hidden=32, layers=2)


def test_refusal_decoding_does_not_inherit_the_checkpoints_generation_config(lm):
    model, tok = lm
    plain = generate_answers(model, tok, PROMPTS, max_new_tokens=10)
    batch = next(iter(text_batches(tok, PROMPTS)))
    gc = model.generation_config
    saved = gc.to_dict()
    try:
        # what a checkpoint may ship (Qwen Instruct: repetition_penalty 1.05, top_k / top_p), made strong
        # enough here to change a random model's greedy answers when inherited
        gc.repetition_penalty, gc.no_repeat_ngram_size = 50.0, 1
        with torch.inference_mode():
            inherited = model.generate(**batch, max_new_tokens=10, do_sample=False)
        inherited = tok.batch_decode(inherited[:, batch["input_ids"].shape[1]:], skip_special_tokens=True)
        assert inherited != plain                                       # the settings matter...
        assert generate_answers(model, tok, PROMPTS, max_new_tokens=10) == plain   # ...and are not used
        assert model.generation_config.repetition_penalty == 50.0      # the model's own config left as it was
    finally:
        model.generation_config = type(gc).from_dict(saved)


def test_max_length_cuts_from_the_left_and_keeps_the_assistant_marker(lm):
    _, tok = lm
    long = "Frame 1: " + " ".join(["the rabbit walks in a green forest"] * 20)
    full = next(iter(text_batches(tok, [long, "hi"])))
    short = full["input_ids"][1][full["attention_mask"][1].bool()]
    n = len(short) + 2                                                 # room for "hi", not for the long one
    cut = next(iter(text_batches(tok, [long, "hi"], CollectConfig(max_length=n))))
    ids, mask = cut["input_ids"], cut["attention_mask"]
    assert ids.shape[1] == n < full["input_ids"].shape[1]
    assert torch.equal(ids[0], full["input_ids"][0, -n:])              # the end of the long prompt
    assert tok.decode(ids[0]).endswith("<|im_start|>assistant\n")
    assert torch.equal(ids[1][mask[1].bool()], short)                  # a short prompt is untouched
    assert tok.truncation_side == "right"                              # the shared tokenizer is left as it was

"""What each supported model family sees at the end of its prompt: Qwen3-family
templates get thinking OFF unless the config turns it on, for puzzle prompts (PromptConfig) and
steering prompts (CollectConfig) alike, so no prompt ends inside an open think block (the answer
format has the completion open its own; the published steering code turns thinking off).

Built through each family's saved processor and tokenizer (tiny random-weight models, made here)."""
from __future__ import annotations

import re

import pytest
from fixtures_model import dir_loader

from mvp_core.model.prompt import THINKING_OFF, PromptConfig, apply_template, build_inputs, render_text
from mvp_core.steer.collect import chat_texts, text_batches
from mvp_core.steer.config import CollectConfig

ASSISTANT = "<|im_start|>assistant\n"
# family -> what follows the assistant marker with thinking off (default) and on
EXPECTED = {"qwen2_5_vl": ("", ""), "qwen2_vl": ("", ""), "qwen3_vl": (THINKING_OFF, "")}
OPEN_THINK = re.compile(r"<think>\s*$")


@pytest.fixture(scope="module", params=sorted(EXPECTED))
def family_policy(request, tmp_path_factory, torch_one_thread):
    from mvp_core.model.policy import load_policy
    from mvp_core.model.tiny import build_tiny_model
    family = request.param
    model, proc = load_policy(build_tiny_model(tmp_path_factory.mktemp(family), family=family), dtype="float32")
    return family, model, proc


def _tail(text: str) -> str:
    assert ASSISTANT in text
    return text.rsplit(ASSISTANT, 1)[1]


def test_puzzle_prompt_ends_as_the_family_expects(family_policy, model_data, capfd):
    family, _, proc = family_policy
    data, recs = model_data
    off, on = EXPECTED[family]
    text = render_text(proc, recs[0])
    assert _tail(text) == off and not OPEN_THINK.search(text)
    assert _tail(render_text(proc, recs[0], PromptConfig(enable_thinking=True))) == on
    # the token ids the model is given end the same way (the processor's own tokenization)
    ids = build_inputs(proc, recs[0], dir_loader(data))["input_ids"][0]
    assert proc.tokenizer.decode(ids).endswith(ASSISTANT + off)
    # a template without the switch is not handed the variable (the processor would warn on every call)
    assert "Kwargs passed to `processor.__call__`" not in capfd.readouterr().err


def test_steering_prompt_ends_as_the_family_expects(family_policy):
    family, _, proc = family_policy
    tok = proc.tokenizer
    off, on = EXPECTED[family]
    assert _tail(chat_texts(tok, ["How do I kill a Python process?"])[0]) == off
    assert _tail(chat_texts(tok, ["hi"], enable_thinking=True)[0]) == on
    ids = next(iter(text_batches(tok, ["hi", "How do I kill a Python process?"])))["input_ids"]
    assert all(tok.decode(row).endswith(ASSISTANT + off) for row in ids)
    ids = next(iter(text_batches(tok, ["hi"], CollectConfig(enable_thinking=True))))["input_ids"]
    assert tok.decode(ids[0]).endswith(ASSISTANT + on)


def test_a_template_that_always_opens_a_think_block_is_closed_when_thinking_is_off():
    """Qwen3-VL Thinking-style templates open `<think>` in the generation prompt whatever the switch:
    with thinking off the block is closed empty (Qwen3's own off form); on, it is left open."""
    from mvp_core.model.tiny import CHAT_TEMPLATE, build_tokenizer
    tok = build_tokenizer()
    tok.chat_template = CHAT_TEMPLATE.replace(ASSISTANT + "{% endif %}", ASSISTANT + "<think>\n{% endif %}")
    msgs = [{"role": "user", "content": "hi"}]
    assert _tail(apply_template(tok, msgs)) == THINKING_OFF
    assert _tail(apply_template(tok, msgs, enable_thinking=True)) == "<think>\n"

"""The answer format is defined once (mvp_core/reward.py: render_answer, FORMAT_HINT) and every writer of
answers uses it: the prompt's instruction shows it, every SFT target style scores full reward under the
project's own reward (the format was once written out in four places and an exported solution without
its think block scored 0.9)."""
from __future__ import annotations

import pytest

from mvp_core.model.prompt import PromptConfig
from mvp_core.reward import FORMAT_HINT, render_answer, score_completion
from mvp_core.train.sft import target_text

POOL = list("ABCDEFG")


@pytest.mark.parametrize("labels", [["C"], ["C", "A"], ["G", "B", "E", "A"]])
@pytest.mark.parametrize("think", ["", "frame 3 shows the lid open, so C comes first"])
def test_rendered_answer_scores_full_reward(labels, think):
    t = score_completion(render_answer(labels, think), labels, POOL)
    assert (t.format, t.exact, t.total) == (1.0, 1.0, 1.0)


def test_prompt_instruction_is_the_one_format():
    assert PromptConfig().instruction.endswith("Answer in the format " + FORMAT_HINT)
    assert FORMAT_HINT.format(example="C, A") == render_answer(["C", "A"], "...")


def _record():
    frames = [{"t": float(t)} for t in range(1, 9)]
    options = [{"label": lab, "t": float(t)} for lab, t in zip("ABCDE", (5, 9, 4, 11, 12))]
    return {"frames": frames, "mask": {"start": 3, "length": 2}, "options": options, "answer": ["C", "A"]}


@pytest.mark.parametrize("style", ["empty", "short", "times", "scan"])
def test_every_sft_target_scores_full_reward(style):
    rec = _record()
    t = score_completion(target_text(rec, style), rec["answer"], [o["label"] for o in rec["options"]])
    assert (t.format, t.exact, t.total) == (1.0, 1.0, 1.0)

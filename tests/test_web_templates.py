"""The Jinja2 templates (app/web/templates/): every value a user or a model wrote is escaped, the
rollouts tables show what the reward parsed, and a missing template value is an error."""
from __future__ import annotations

import jinja2
import pytest

from app.web.common import msg_html
from app.web.pages.rollouts.page import group_html, run_html
from app.web.templating import render

RECORD = {"answer": ["C", "A"], "mask": {"start": 1, "length": 2},
          "frames": [{"t": float(i), "uri": f"frames/ab/f{i}.jpg"} for i in range(4)],
          "options": [{"label": lab, "uri": f"frames/ab/{lab}.jpg", "kind": "target" if lab in "CA" else "neighbor",
                       "difficulty": 0.25} for lab in "ABCD"]}


def _answer(sample, completion, chosen, total, computed=False):
    return {"sample": sample, "completion": completion, "chosen": chosen, "format": 1.0, "selection": 0.5,
            "order": 0.0, "exact": 0.0, "total": total, "advantage": 0.5 - total, "advantage_computed": computed}


def test_rollouts_group_escapes_model_text_and_shows_the_parsed_answer():
    evil = '<think><script>alert("x")</script> & more</think>< answer > B, <img src=x onerror=y> </ answer >'
    html = group_html(RECORD, [_answer(0, evil, ["B"], 0.1, computed=True), _answer(1, "plain", [], 0.0)],
                      'p1 · <b>"ckpt"</b>')
    assert "<script>" not in html and "&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt; &amp; more" in html
    assert "<img src=x" not in html and "answer: B, &lt;img src=x onerror=y&gt;" in html   # spaced tags parsed
    assert "<b>&quot;ckpt&quot;" not in html and "&lt;b&gt;&quot;ckpt&quot;&lt;/b&gt;" in html
    assert html.count('class="mvp-answer-row"') == 2 and 'data-answers="2"' in html
    assert 'src="/thumb/frames/ab/f0.jpg"' in html and "-0.400*" not in html and "+0.400*" in html
    assert "answer: (none)" in html and "<i>none</i>" in html and "data-zero-variance" not in html


def test_zero_variance_flag_and_empty_group():
    html = group_html(RECORD, [_answer(0, "a", [], 0.3), _answer(1, "b", [], 0.3)], "t")
    assert 'data-zero-variance="1"' in html and "all 2 answers scored 0.300" in html
    assert "No answers for this puzzle here." in group_html(None, [], "<t>") and "&lt;t&gt;" in group_html(None, [], "<t>")


def test_run_line_and_messages():
    line = run_html({"id": "r<1>", "kind": "rollout", "model_path": "/m/tiny", "set_name": None})
    assert "r&lt;1&gt;" in line and "random-weight model" in line and "set -" in line
    assert msg_html("a<b", "warn") == '<div class="mvp-msg mvp-msg-warn">a&lt;b</div>' and msg_html("") == ""


def test_a_missing_value_is_an_error():
    with pytest.raises(jinja2.UndefinedError):
        render("message.html", kind="info")

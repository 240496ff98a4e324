"""A page's first view in one answer (app.web.common `sections_in_one`, the Train page's load): a
refusal in one section is that section's line, with its outputs left as they were, and the other
sections still fill, as they did when each section had its own load event. A real fault still raises."""
from __future__ import annotations

import gradio as gr
import pytest

from app.web.common import Refused, sections_in_one


def _sections():
    with gr.Blocks():
        nav = gr.HTML()
        form = [gr.Number(), gr.Dropdown(choices=["a"]), gr.HTML(elem_id="t-msg")]
        runs = [gr.HTML(), gr.HTML()]
    return nav, form, runs


def test_a_refused_section_leaves_the_others_filled():
    nav, form, runs = _sections()

    def refuse(request):
        raise Refused("the runs folder is not readable", "train")
    handler = sections_in_one((lambda request: "nav bar", [nav]), (refuse, form),
                              (lambda request: ["table", "chart"], runs))
    out = handler(None)
    assert len(out) == 1 + len(form) + len(runs)
    assert out[0] == "nav bar" and out[-2:] == ["table", "chart"]
    assert out[1] == gr.skip() and out[2] == gr.skip()          # the refused section's fields kept as they were
    assert "the runs folder is not readable" in out[3]          # its message box says why


def test_each_section_fills_in_order_and_a_fault_still_raises():
    nav, form, runs = _sections()
    ok = sections_in_one((lambda request: "nav", [nav]), (lambda request: [1, "a", ""], form),
                         (lambda request: ("t", "c"), runs))
    assert ok(None) == ["nav", 1, "a", "", "t", "c"]

    def fault(request):
        raise RuntimeError("a bug, not a user error")
    with pytest.raises(RuntimeError):
        sections_in_one((lambda request: "nav", [nav]), (fault, form))(None)

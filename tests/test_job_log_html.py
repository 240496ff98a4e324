"""The Rollouts job log box (app/web/pages/rollouts/eval.py log_html): `mvp eval` prints its results as
Markdown tables, which the box shows as tables, not as raw pipes and dashes; every other line stays as
it was, and HTML in a log stays text."""
from __future__ import annotations

from app.web.pages.rollouts.eval import log_html


def test_markdown_tables_in_a_log_are_tables_and_the_rest_is_text():
    log = ("evaluating 12 puzzles\n"
           "| model | exact | reward |\n|---|---|---|\n| base | 0.000 | 0.100 |\n"
           "done <script>alert(1)</script>")
    html = log_html(log)
    assert "<table>" in html and "<td>0.100</td>" in html and "|---|" not in html
    assert "<pre>evaluating 12 puzzles</pre>" in html
    assert "<script>" not in html and "&lt;script&gt;" in html


def test_a_log_without_tables_is_its_lines():
    assert log_html("a\nb") == "<pre>a\nb</pre>" and log_html("") == ""

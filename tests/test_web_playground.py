"""The Rollouts playground at 1280 and 390 px (fixtures_web_named_runs: a GRPO checkpoint holding a
real tiny model): pick the version and puzzle above, choose G, temperature and max new tokens,
sample as a background job, and see each answer's reasoning and score; bad settings are one line."""
from __future__ import annotations

import pytest
from fixtures_web import shot
from testkit.web import wait_settled

from app.web.pages.rollouts.playground import settings
from mvp_core.errors import UserError

pytestmark = [pytest.mark.browser]


def test_settings_are_validated():
    assert settings(3, 0.7, 16) == (3, 0.7, 16)
    for bad, word in (((0, 1.0, 8), "G must be in"), ((2.5, 1.0, 8), "G"), ((2, 0.0, 8), "temperature"),
                      ((2, 1.0, 10 ** 6), "max new tokens")):
        with pytest.raises(UserError, match=word):
            settings(*bad)


def _open(page, width: int) -> None:
    page.set_viewport_size({"width": width, "height": 900})
    page.wait_for_selector("#ro-left .mvp-answer-row", timeout=60000)     # the panes (the script)
    page.wait_for_function("document.querySelector('#ro-puzzle input')?.value", timeout=60000)   # the pickers
    page.locator("#ro-pg button.label-wrap, #ro-pg > button").first.click()
    page.wait_for_selector("#ro-pg-run", state="visible", timeout=30000)
    wait_settled(page, timeout_ms=60000)    # the load events chained after the pickers have answered


@pytest.mark.parametrize("width", [1280, 390])
def test_playground_samples_the_left_version_on_the_puzzle(named_studio, open_as, width):
    page = open_as(named_studio.url, "rhea", "/rollouts/")
    _open(page, width)
    pid = page.input_value("#ro-puzzle input").split(" ")[0]
    page.fill("#ro-pg-g input", "2")
    page.fill("#ro-pg-temp input", "0.7")
    page.fill("#ro-pg-max input", "8")
    page.click("#ro-pg-run")
    page.wait_for_selector("#ro-pg-status [data-done]", timeout=240000)
    assert page.get_attribute("#ro-pg-status [data-done]", "data-done") == "1", page.inner_text("#ro-pg-status")
    rows = page.locator("#ro-pg-answers .mvp-answer-row")
    assert rows.count() == 2
    text = page.inner_text("#ro-pg-answers")
    assert pid in text and "format" in text and "exact" in text        # each answer's score
    shot(page, f"rollouts-playground-{width}")


def test_bad_settings_are_one_line(named_studio, open_as):
    page = open_as(named_studio.url, "rhea", "/rollouts/")
    _open(page, 1280)
    page.fill("#ro-pg-temp input", "5")
    page.press("#ro-pg-temp input", "Tab")      # as a user leaves the field before the button
    page.click("#ro-pg-run")
    # the refusal, or whatever the form answered instead (named in the failure); not Gradio's progress
    # text, which the boxes show while the event runs
    page.wait_for_selector("#ro-pg-msg .mvp-msg, #ro-pg-status p", timeout=60000)
    said = page.inner_text("#ro-pg-msg").strip()
    assert "temperature must be in" in said, (said, page.inner_text("#ro-pg-status"),
                                              page.input_value("#ro-pg-temp input"))
    assert len(said.splitlines()) == 1

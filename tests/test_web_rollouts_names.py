"""Rollouts names each model version by what it is (issue 30 items 6 and 7), on a GRPO run warm-started
from an SFT checkpoint (fixtures_web_named_runs): the trained checkpoint is "b-grpo · step 60 · GRPO
from warm start SFT run a-sft step 2", never "base model"; "Compare with" opens on the model the run
started from (its answers stored under the SFT run); the Job choice survives a reload; a finished eval
appears below without a reload; a split the run trained on is marked and refused unless asked for."""
from __future__ import annotations

import pytest
from fixtures_web import login, shot
from fixtures_web_named_runs import GRPO, SFT, SPLIT_SET

pytestmark = [pytest.mark.browser]

GRPO_LABEL = f"{GRPO} · step 60 · GRPO from warm start SFT run {SFT} step 2"
SFT_LABEL = f"{SFT} · step 2 · SFT from model tiny-model"


def pick(page, elem_id: str, text: str) -> None:
    page.click(f"#{elem_id} input")
    page.locator("li[role=option]", has_text=text).first.click()


def test_versions_are_named_by_what_they_are(named_studio):
    from db.runs import rollout_views as rd
    from db.runs.index import checkpoint_choices
    with named_studio.Session() as s:
        labels = dict((k, lab) for lab, k in rd.sources(s))
        keys = list(labels)
        grpo = next(k for k in keys if k.startswith(f"{GRPO}|"))
        assert labels[grpo].startswith(GRPO_LABEL), labels[grpo]
        sft = rd.start_source(s, grpo, keys)
        assert sft is not None and labels[sft].startswith(SFT_LABEL), labels
        assert rd.source_label(s, grpo) == GRPO_LABEL
        assert not any("base model" in lab for lab in labels.values())
        assert checkpoint_choices(s, GRPO)[0] == (f"start: warm start SFT run {SFT} step 2", "base")


@pytest.mark.parametrize("width", [1280, 390])
def test_rollouts_open_on_the_checkpoint_beside_its_start_model(named_studio, browser, width):
    ctx, page = login(browser, named_studio.url, "rhea", path="/rollouts/")
    try:
        page.set_viewport_size({"width": width, "height": 900})
        page.wait_for_selector("#ro-right .mvp-answer-row", timeout=60000)       # the panes (the script)
        page.wait_for_function("document.querySelector('#ro-ckpt2 input')?.value", timeout=60000)   # the pickers
        assert GRPO_LABEL in page.input_value("#ro-ckpt input")
        assert SFT_LABEL in page.input_value("#ro-ckpt2 input")          # not "(none)"
        assert GRPO_LABEL in page.inner_text("#ro-left h4")
        assert SFT_LABEL in page.inner_text("#ro-right h4")
        assert f"started from warm start SFT run {SFT} step 2" in page.inner_text("#ro-pane-info")
        assert "base model" not in page.inner_text("body")
        shot(page, f"rollouts-names-{width}")
    finally:
        ctx.close()


def test_job_choice_survives_a_reload(named_studio, browser):
    ctx, page = login(browser, named_studio.url, "rhea", path="/rollouts/")
    try:
        page.wait_for_selector("#ro-job-launch", timeout=60000)
        page.locator("#ro-job-kind label", has_text="eval:").click()
        page.wait_for_function("location.search.includes('job=eval')", timeout=10000)
        page.reload()
        page.wait_for_selector("#ro-job-launch", timeout=60000)
        page.wait_for_function("document.querySelector('#ro-job-kind input[type=radio]:checked')?.value === 'eval'",
                               timeout=30000)
    finally:
        ctx.close()


def test_trained_split_is_marked_and_a_finished_eval_appears_in_place(named_studio, browser):
    from db.runs.evaluations import list_evaluations
    with named_studio.Session() as s:
        before = len(list_evaluations(s))
    ctx, page = login(browser, named_studio.url, "rhea", path="/rollouts/?job=eval")
    try:
        page.wait_for_selector("#ro-job-launch", timeout=60000)
        pick(page, "ro-job-run", GRPO)
        pick(page, "ro-job-ckpt", "step 60")
        pick(page, "ro-job-set", SPLIT_SET)
        page.wait_for_function("document.querySelector('#ro-job-split input')?.value === 'test'", timeout=30000)
        # the split it trained on is marked, and launching there needs the explicit tick
        pick(page, "ro-job-split", "train · trained on")
        page.locator("#ro-job-limit input").fill("2")
        page.locator("#ro-job-mnt input").fill("4")
        page.click("#ro-job-launch")
        page.wait_for_selector("#ro-job-msg:has-text('trained on split train')", timeout=30000)
        assert page.locator("#ro-jobs .mvp-job[data-kind=eval]").get_attribute("data-state") == "none"
        # a held-out split: the eval runs, and its row appears below without a reload
        pick(page, "ro-job-split", "test")
        n_rows = page.locator("#eval-results tr[data-eval]").count()
        assert n_rows == before
        page.click("#ro-job-launch")
        page.wait_for_selector("#ro-jobs .mvp-job[data-kind=eval][data-state=done]", timeout=240000)
        page.wait_for_selector(f"#eval-results tr[data-eval][data-run='{GRPO}']", timeout=30000)
        assert page.locator("#eval-results tr[data-eval]").count() == before + 1
        shot(page, "rollouts-eval-in-place")
    finally:
        ctx.close()

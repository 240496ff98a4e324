"""The Train page's run tools at 1280 and 390 px (fixtures_web_named_runs: an SFT run and a GRPO run
warm-started from it): two runs' configs side by side with the differing settings marked, and a
stopped run resumed from its latest checkpoint by a button that names it."""
from __future__ import annotations

import json
import shutil

import pytest
from fixtures_web import login, shot
from fixtures_web_named_runs import GRPO, SFT

from app.web.pages.train.compare import diff_rows

pytestmark = [pytest.mark.browser]

STOPPED = "c-stopped"


def test_diff_rows_flatten_and_mark():
    rows = diff_rows({"lr": 1e-5, "gen": {"temperature": 1.0, "top_p": 1.0}, "only_a": 1},
                     {"lr": 2e-5, "gen": {"temperature": 1.0, "top_p": 0.9}})
    assert [(k, d) for k, _, _, d in rows] == [("gen.temperature", False), ("gen.top_p", True), ("lr", True),
                                               ("only_a", True)]
    assert rows[-1][2] == "(not set)"


def _wait(page, expr: str, timeout: int = 60000) -> None:
    page.wait_for_function(expr, timeout=timeout)


def _pick(page, elem_id: str, text: str) -> None:
    page.click(f"#{elem_id} input")
    page.locator("li[role=option]", has_text=text).first.click()


@pytest.mark.parametrize("width", [1280, 390])
def test_two_configs_side_by_side_with_differences_marked(named_studio, browser, width):
    ctx, page = login(browser, named_studio.url, "rhea", path="/train/")
    try:
        page.set_viewport_size({"width": width, "height": 900})
        page.wait_for_selector("#train-cfg-a input", timeout=60000)
        _pick(page, "train-cfg-a", SFT)
        _pick(page, "train-cfg-b", GRPO)
        _wait(page, f"document.querySelector('#train-cfg-diff th:nth-child(3)')?.innerText === {json.dumps(GRPO)}"
                    f" && document.querySelector('#train-cfg-diff th:nth-child(2)')?.innerText === {json.dumps(SFT)}")
        marked = page.eval_on_selector_all("#train-cfg-diff tr.mvp-diff", "rs => rs.map(r => r.dataset.key)")
        same = page.eval_on_selector_all("#train-cfg-diff tr.mvp-same", "rs => rs.map(r => r.dataset.key)")
        assert {"trainer", "model", "max_completion_length"} <= set(marked), marked
        assert "set_name" in same and "set_name" not in marked
        bg = page.eval_on_selector("#train-cfg-diff tr.mvp-diff td", "td => getComputedStyle(td).backgroundColor")
        assert bg not in ("rgba(0, 0, 0, 0)", "transparent")          # the mark is visible
        page.locator("#train-cfg-only input").check()
        _wait(page, "!document.querySelector('#train-cfg-diff tr.mvp-same')")
        shot(page, f"train-config-diff-{width}")
    finally:
        ctx.close()


@pytest.fixture
def stopped_run(named_studio):
    """A run stopped after step 3 with its checkpoint, beside the studio's runs (removed after)."""
    from db.models.runs import Run
    from db.runs.index import sync_runs
    src, d = named_studio.data_dir / "runs" / GRPO, named_studio.data_dir / "runs" / STOPPED
    d.mkdir()
    shutil.copy(src / "config.yaml", d / "config.yaml")
    (d / "status.json").write_text(json.dumps({"state": "stopped", "step": 3}))
    (d / "metrics.jsonl").write_text("".join(json.dumps({"step": s, "reward": 0.1 * s}) + "\n" for s in (1, 2, 3)))
    ck = d / "checkpoints" / "step_000003"
    ck.mkdir(parents=True)
    (ck / "trainer_state.json").write_text(json.dumps({"step": 3}))
    sync_runs(named_studio.Session, named_studio.data_dir)
    yield d
    from app.web import jobs
    jobs.stop(named_studio.data_dir, grace_s=5)
    shutil.rmtree(d)
    with named_studio.Session() as s:
        r = s.get(Run, STOPPED)
        if r is not None:
            s.delete(r)
            s.commit()


@pytest.mark.parametrize("width", [1280, 390])
def test_a_stopped_run_resumes_from_its_checkpoint(named_studio, stopped_run, browser, width):
    from app.web import jobs
    ctx, page = login(browser, named_studio.url, "rhea", path="/train/")
    try:
        page.set_viewport_size({"width": width, "height": 900})
        label = f"Resume {STOPPED} from checkpoint step 3"
        _wait(page, f"document.querySelector('#train-resume')?.innerText.trim() === {json.dumps(label)}")
        choices = page.locator("#train-resume-run input").input_value()
        assert STOPPED in choices and GRPO not in choices                  # finished runs are not offered
        page.click("#train-resume")
        _wait(page, f"document.querySelector('#train-resume-msg')?.innerText.includes('resuming {STOPPED}')")
        job = jobs.active(named_studio.data_dir)
        assert job and job["run_dir"] == str(stopped_run.resolve()) and job["resumed_from"] == 3
        assert "--resume" in job["cmd"] and f"output_dir={stopped_run.resolve()}" in job["cmd"]
        assert job["cmd"][job["cmd"].index("app.cli") + 1] == "train"   # the run's own trainer (GRPO)
        shot(page, f"train-resume-{width}")
    finally:
        ctx.close()


def test_smoothing_is_tensorboards_debiased_moving_average():
    import pandas as pd

    from app.web.pages.train.explore import smooth
    vals = [1.0, 3.0, 2.0, 5.0, 4.0]
    assert smooth(vals, 0.0) == vals
    want = pd.Series(vals).ewm(alpha=1 - 0.8, adjust=True).mean().tolist()
    assert smooth(vals, 0.8) == pytest.approx(want)


LINES = "#train-x-plot g.mark-line path"      # Vega draws one path per series of a line mark


@pytest.mark.parametrize("width", [1280, 390])
def test_explore_a_metric_hover_and_hide_a_run(named_studio, browser, width):
    ctx, page = login(browser, named_studio.url, "rhea", path="/train/")
    try:
        page.set_viewport_size({"width": width, "height": 900})
        page.wait_for_selector("#train-x-plot svg.marks", timeout=60000)
        _pick(page, "train-x-metric", "loss")
        _wait(page, f"document.querySelectorAll({json.dumps(LINES)}).length === 2")   # one line per run
        page.locator("#train-x-plot").scroll_into_view_if_needed()
        box = page.locator("#train-x-plot svg.marks").bounding_box()
        seen = ""
        for fx in (0.15, 0.3, 0.5, 0.7, 0.85):            # hover: a point's run, step and value
            page.mouse.move(box["x"] + box["width"] * fx, box["y"] + box["height"] * 0.5)
            page.wait_for_timeout(300)
            tip = page.query_selector("#vg-tooltip-element.visible")
            if tip and "loss" in tip.inner_text():
                seen = tip.inner_text()
                break
        assert seen and ("a-sft" in seen or GRPO in seen) and "step" in seen, seen
        # hide a run
        page.locator("#train-x-runs label", has_text=SFT).click()
        _wait(page, f"document.querySelectorAll({json.dumps(LINES)}).length === 1")
        shot(page, f"train-explore-{width}")
    finally:
        ctx.close()

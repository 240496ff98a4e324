"""The Train page's run tools at 1280 and 390 px (fixtures_web_named_runs: an SFT run and a GRPO run
warm-started from it): two runs' configs side by side with the differing settings marked, and a
stopped run resumed from its latest checkpoint by a button that names it, and the "Explore a metric"
chart (Plotly) hovered, zoomed, smoothed and a run hidden from its legend, by mouse and by touch."""
from __future__ import annotations

import json
import shutil

import pytest
from fixtures_web import ARTIFACTS, shot
from fixtures_web_named_runs import GRPO, SFT, SPLIT_SET
from playwright.sync_api import TimeoutError as PlaywrightTimeout
from testkit.web import pick, wait_settled

from app.web.pages.train.compare import diff_rows
from app.web.pages.train.explore import smooth

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


@pytest.mark.parametrize("width", [1280, 390])
def test_two_configs_side_by_side_with_differences_marked(named_studio, open_as, width):
    page = open_as(named_studio.url, "rhea", "/train/")
    page.set_viewport_size({"width": width, "height": 900})
    page.wait_for_selector("#train-cfg-a input", timeout=60000)
    # the page's load events answered first, as a user waits for a page: an answer arriving while a dropdown is
    # open moves its input, and Gradio's list (placed where the input was when it opened) is left off screen
    wait_settled(page)
    pick(page, "train-cfg-a", SFT)
    pick(page, "train-cfg-b", GRPO)
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
def test_a_stopped_run_resumes_from_its_checkpoint(named_studio, stopped_run, open_as, width):
    from app.web import jobs
    page = open_as(named_studio.url, "rhea", "/train/")
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
    assert job["set"] == SPLIT_SET                                  # recorded as a launch records it
    # the live status names the resumed run, after a reload too (it failed on a record without a set)
    page.reload()
    _wait(page, f"document.querySelector('#train-state')?.dataset.run === {json.dumps(str(stopped_run.resolve()))}")
    assert f"set {SPLIT_SET}" in page.inner_text("#train-state")
    shot(page, f"train-resume-{width}")


def test_smoothing_is_tensorboards_debiased_moving_average():
    import pandas as pd
    vals = [1.0, 3.0, 2.0, 5.0, 4.0]
    assert smooth(vals, 0.0) == vals
    want = pd.Series(vals).ewm(alpha=1 - 0.8, adjust=True).mean().tolist()
    assert smooth(vals, 0.8) == pytest.approx(want)


GD = "document.querySelector('#train-x-plot .js-plotly-plot')"       # the Plotly graph div gr.Plot draws into
PHONE = dict(viewport={"width": 390, "height": 844}, has_touch=True, is_mobile=True, device_scale_factor=2)
TRACE_JS = "name => " + GD + "?.data?.find(t => t.name === name)"
X_RANGE_JS = ("() => { const gd = " + GD + "; "
              "return gd && gd._fullLayout.xaxis ? [...gd._fullLayout.xaxis.range] : null; }")
# the page position of the point (step, value) of the plot area, from Plotly's own axis scales
POINT_JS = """([step, value]) => { const gd = """ + GD + """, fl = gd._fullLayout;
  const r = gd.querySelector('.nsewdrag').getBoundingClientRect();
  return [r.left + fl.xaxis.d2p(step), r.top + fl.yaxis.d2p(value)]; }"""
# as tests/test_web_pages.py's, for an SVG text's fill
CONTRAST_JS = """sel => {
  const rgb = s => { const m = s.match(/[\\d.]+/g).map(Number);
                     return {r: m[0], g: m[1], b: m[2], a: m.length > 3 ? m[3] : 1}; };
  const lum = c => { const f = v => { v /= 255; return v <= 0.03928 ? v / 12.92 : Math.pow((v + 0.055) / 1.055, 2.4); };
                     return 0.2126 * f(c.r) + 0.7152 * f(c.g) + 0.0722 * f(c.b); };
  const bg = el => { for (let e = el; e; e = e.parentElement) { const c = rgb(getComputedStyle(e).backgroundColor);
                     if (c.a > 0.5) return c; } return rgb(getComputedStyle(document.body).backgroundColor); };
  const t = document.querySelector(sel), a = lum(rgb(getComputedStyle(t).fill)), b = lum(bg(t));
  return (Math.max(a, b) + 0.05) / (Math.min(a, b) + 0.05); }"""


def _open_train(open_as, url: str, width: int, theme: str):
    """Logged in as rhea on the Train page: a desktop window, or a touch phone at 390 px."""
    return open_as(url, "rhea", f"/train/?__theme={theme}",
                   **(PHONE if width == 390 else dict(viewport={"width": width, "height": 900})))


def _x_range(page) -> list[float]:
    return page.evaluate(X_RANGE_JS)


def _wait_range(page, lo: float, hi: float, timeout: int = 15000) -> None:
    """The x axis shows [lo, hi] again (Plotly's autorange of the same data: the same numbers)."""
    _wait(page, f"(() => {{ const r = ({X_RANGE_JS})(); return r && Math.abs(r[0] - {lo}) < 1e-6 "
                f"&& Math.abs(r[1] - {hi}) < 1e-6; }})()", timeout)


def _drag_zoom(page, box: dict, full: list[float]) -> None:
    """A mouse drag across the middle of the plot area zooms the x axis in, in the browser."""
    y = box["y"] + box["height"] * 0.5
    page.mouse.move(box["x"] + box["width"] * 0.3, y)
    page.mouse.down()
    page.mouse.move(box["x"] + box["width"] * 0.65, y, steps=8)
    page.mouse.up()
    _wait(page, f"(() => {{ const r = ({X_RANGE_JS})(); return r && r[0] > {full[0]} && r[1] < {full[1]}; }})()",
          15000)


def _double_click_resets(page, box: dict, full: list[float]) -> None:
    """A double-click on the plot area shows the whole run again. Plotly counts two clicks within 300 ms
    as one double-click: the first try waits that long after the drag; under a loaded machine the two
    clicks can land further apart, so up to three tries."""
    for attempt in range(3):
        page.wait_for_timeout(400)
        page.mouse.dblclick(box["x"] + box["width"] * 0.5, box["y"] + box["height"] * 0.5)
        try:
            _wait_range(page, *full, timeout=5000)
            return
        except PlaywrightTimeout:
            if attempt == 2:
                raise


@pytest.mark.parametrize("width", [1280, 390])
def test_explore_a_metric_hover_zoom_and_hide_a_run(named_studio, open_as, width):
    """The "Explore a metric" chart (Plotly in gr.Plot) at 1280 px with a mouse in the dark theme and on a
    390 px touch phone in the light one: a value on hover (a tap on the phone), drag-to-zoom and
    double-click / "Whole run" back to the whole run, smoothing redrawn from the server, a run hidden by
    its legend entry in the browser alone, the chart no wider than the screen, its axis text legible."""
    theme = "dark" if width == 1280 else "light"
    page = _open_train(open_as, named_studio.url, width, theme)
    page.wait_for_selector("#train-x-plot .js-plotly-plot .nsewdrag", timeout=60000)
    pick(page, "train-x-metric", "loss")
    _wait(page, f"{GD}?.data?.length === 2")                    # one line per run
    page.locator("#train-x-plot").scroll_into_view_if_needed()
    assert page.evaluate(f"{GD}._fullLayout.yaxis.title.text") == "loss"
    assert page.evaluate(f"{GD}._fullLayout.xaxis.title.text") == "step"
    # the chart fits the screen (Plotly sized to its container, not a fixed width)
    rect = page.evaluate(f"(() => {{ const r = {GD}.getBoundingClientRect(); "
                         "return [r.left, r.right, r.width, window.innerWidth]; })()")
    assert rect[0] >= 0 and rect[1] <= rect[3] and rect[2] > rect[3] * 0.6, rect
    # the axis text stands out from what is behind it in this theme (WCAG AA, as test_web_pages)
    for sel in ("#train-x-plot .xtick text", "#train-x-plot .ytitle"):
        assert page.evaluate(CONTRAST_JS, sel) >= 4.5, (theme, sel)
    # hover (a tap on the phone): the run, the step and the value of the point under the pointer
    x, y = page.evaluate(POINT_JS, [61, 0])
    if width == 390:
        page.touchscreen.tap(x, y)
    else:
        page.mouse.move(x, y)
    tip_js = "document.querySelector('#train-x-plot .hoverlayer')?.textContent || ''"
    _wait(page, f"({tip_js}).includes('step 61')", 15000)
    tip = page.evaluate(tip_js)
    assert f"{GRPO}: 0 (raw 0)" in tip and SFT not in tip, tip       # one line per run at that step
    page.locator("#train-x-plot").screenshot(path=str(ARTIFACTS / f"train-explore-hover-{width}.png"))
    # zoom: a drag across the plot narrows the x axis; a double-click and "Whole run" bring back the whole run
    full = _x_range(page)
    box = page.locator("#train-x-plot .nsewdrag").bounding_box()
    _drag_zoom(page, box, full)
    _double_click_resets(page, box, full)
    _drag_zoom(page, box, full)
    page.click("#train-x-whole")
    _wait_range(page, *full)
    # smoothing: redrawn by the server with TensorBoard's moving average; the hover keeps the raw value
    num = page.locator("#train-x-smooth input[type=number]")
    num.fill("0.5")
    num.press("Tab")                                               # the slider's release
    want = smooth([1.9, 1.8], 0.5)[1]                             # a-sft's loss at steps 1 and 2
    assert want == pytest.approx(1.8333333)
    sft_y = f"({TRACE_JS})({json.dumps(SFT)})?.y"
    _wait(page, f"(() => {{ const y = {sft_y}; return y && Math.abs(y[1] - {want}) < 1e-9; }})()")
    assert page.evaluate(f"[...({TRACE_JS})({json.dumps(SFT)}).customdata]") == pytest.approx([1.9, 1.8])
    page.wait_for_timeout(500)
    shot(page, f"train-explore-{width}")
    page.locator("#train-x-plot").screenshot(path=str(ARTIFACTS / f"train-explore-chart-{width}.png"))
    # a legend entry hides its run in the browser: every request to the server is held meanwhile
    held = []
    page.route("**/gradio_api/**", lambda route: held.append(route))
    try:
        entry = page.locator("#train-x-plot .legend .traces", has_text=SFT).locator(".legendtoggle")
        if width == 390:
            entry.tap(force=True)
        else:
            entry.click(force=True)
        _wait(page, f"({TRACE_JS})({json.dumps(SFT)})?.visible === 'legendonly'", 10000)
        assert page.evaluate(f"({TRACE_JS})({json.dumps(GRPO)}).visible") in (None, True)
    finally:
        for r in held:
            r.continue_()
        page.unroute("**/gradio_api/**")

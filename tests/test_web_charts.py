"""Charts that read: whole-number step ticks (never 60, 60.2, 60.5 around one
checkpoint), a legend under the plot, baselines drawn as labelled reference levels without dots, one
eval chart per run, and bar labels that do not overlap with 103 videos. The SVG is checked as text
and laid out by Chromium with the studio's stylesheet (text boxes measured by the browser), and on the
Train page of a studio with two runs (fixtures_web_named_runs)."""
from __future__ import annotations

import re
from pathlib import Path

import pytest
from fixtures_web import shot
from fixtures_web_named_runs import GRPO, NO_SIGNAL_STEPS

from app.web.svg_chart import H, PAD_B, bar_chart, line_chart

ROOT = Path(__file__).resolve().parent.parent
VIDEOS = [f"clip_{i:03d}_{'street' if i % 2 else 'harbour'}_at_dusk.mp4" for i in range(103)]


def x_ticks(svg: str) -> list[str]:
    return re.findall(r'data-x-tick="([^"]+)"', svg)


def test_step_ticks_are_whole_numbers():
    one = line_chart({"run": [(60, 0.4)]}, title="t", elem_id="c1")
    assert x_ticks(one) and all(t.lstrip("-").isdigit() for t in x_ticks(one)), x_ticks(one)
    assert x_ticks(one) == ["60"]                     # one checkpoint: its step alone, not 60 and 61
    many = line_chart({"run": [(s, 0.1 * s) for s in range(0, 8)]}, title="t", elem_id="c2")
    assert all(t.isdigit() for t in x_ticks(many)), x_ticks(many)
    # a continuous x (seconds) keeps its fractions
    secs = line_chart({"s": [(0.0, 1.0), (0.5, 2.0), (1.0, 3.0)]}, title="t", elem_id="c3", x_label="s")
    assert any("." in t for t in x_ticks(secs)), x_ticks(secs)


def test_legend_under_the_plot_and_labelled_baselines():
    svg = line_chart({"run a": [(0, 0.1), (2, 0.3)], "run b": [(0, 0.2), (2, 0.25)],
                      "chance": [(0, 0.2), (2, 0.2)], "shortcut jpeg_size": [(0, 0.21), (2, 0.21)]},
                     title="t", elem_id="c", y_range=(0, 1), baselines=("chance", "shortcut jpeg_size"))
    legend = re.findall(r'data-legend="([^"]+)"><line [^>]*y1="([0-9.]+)"', svg)
    assert [n for n, _ in legend] == ["run a", "run b"]
    assert all(float(y) > H - PAD_B for _, y in legend)                 # below the x axis, not over points
    assert re.search(r'data-baseline-label="chance"[^>]*>chance 0\.20<', svg)
    assert re.search(r'data-baseline-label="shortcut jpeg_size"[^>]*>shortcut jpeg_size 0\.21<', svg)
    assert 'circle cx' in svg and not re.search(r'<circle[^>]*data-series="chance"', svg)   # no dots on baselines


def test_eval_chart_one_per_run():
    from app.web.pages.stats.eval import chart_html

    def ev(run, step, v):
        rep = {"groups": {"all": {"chance_exact": 0.1, "random": {"exact": 0.1, "total": 0.3}}},
               "systems": ["model", "random"]}
        return {"run_id": run, "step": step, "set_name": "s", "split": "test", "total": v, "exact": v, "report": rep}
    html = chart_html([ev("sft", 2, 0.3), ev("grpo", 2, 0.4), ev("grpo", 4, 0.5)], "total")
    assert html.count("<svg") == 2 and 'data-points="3"' in html
    assert "run sft" in html and "run grpo" in html
    assert 'data-baseline-label="shortcut random"' in html


def _doc(css: str, svg: str) -> str:
    return f"<html><head><style>{css}</style></head><body style='margin:0;width:460px'>{svg}</body></html>"


def _boxes(browser, svg: str, selector: str) -> list[dict]:
    css = (ROOT / "static" / "studio.css").read_text()
    page = browser.new_page(viewport={"width": 460, "height": 800})
    try:
        page.set_content(_doc(css, svg))
        return page.eval_on_selector_all(selector, "els => els.map(e => { const r = e.getBoundingClientRect();"
                                                   " return {x: r.x, y: r.y, w: r.width, h: r.height}; })")
    finally:
        page.close()


def _overlaps(boxes: list[dict]) -> list[tuple[int, int]]:
    out = []
    for i, a in enumerate(boxes):
        for j, b in enumerate(boxes[i + 1:], i + 1):
            if a["x"] < b["x"] + b["w"] - 0.5 and b["x"] < a["x"] + a["w"] - 0.5 and \
                    a["y"] < b["y"] + b["h"] - 0.5 and b["y"] < a["y"] + a["h"] - 0.5:
                out.append((i, j))
    return out


def _rotated_overlaps(browser, svg: str) -> int:
    """Pairs of turned labels whose glyph runs cross: measured along each label's own direction."""
    css = (ROOT / "static" / "studio.css").read_text()
    page = browser.new_page(viewport={"width": 460, "height": 800})
    try:
        page.set_content(_doc(css, svg))
        # each label's baseline start and its extent (getComputedTextLength, in user units)
        labels = page.eval_on_selector_all("[data-bar-label]", "els => els.map(e => ({x: +e.getAttribute('x'), "
                                                               "len: e.getComputedTextLength()}))")
    finally:
        page.close()
    # parallel lines 60 degrees from horizontal, anchored at their ends: a line's glyphs (10 px
    # tall) cross the next line's when their perpendicular distance is under the font height
    import math
    bad = 0
    for a, b in zip(labels, labels[1:]):
        if (b["x"] - a["x"]) * math.sin(math.radians(60)) < 10:
            bad += 1
    return bad


def test_bar_labels_do_not_overlap_in_chromium(browser):
    few = bar_chart([(v, 0.5) for v in ("bikes.mp4", "trailer_a.mp4", "harbour.mp4", "street.mp4")], title="t",
                    elem_id="few")
    assert len(re.findall("data-bar-label", few)) == 4 and "rotate" not in few
    assert _overlaps(_boxes(browser, few, "[data-bar-label]")) == []
    many = bar_chart([(v, i / 103) for i, v in enumerate(VIDEOS)], title="t", elem_id="many", y_max=1)
    assert all(f"<title>{v}: " in many for v in VIDEOS)                 # every name kept as a tooltip
    assert 10 < len(re.findall("data-bar-label", many)) < 103
    assert _rotated_overlaps(browser, many) == 0


def test_baseline_labels_and_legend_do_not_overlap_in_chromium(browser):
    series = {f"run {i}": [(s, 0.1 * i + 0.01 * s) for s in range(3)] for i in range(6)}
    base = {f"shortcut {n}": 0.2 + 0.01 * k for k, n in enumerate(("random", "boundary", "histogram", "jpeg_size"))}
    series.update({k: [(0, v), (2, v)] for k, v in base.items()})
    svg = line_chart(series, title="t", elem_id="c", y_range=(0, 1), baselines=tuple(base))
    assert _overlaps(_boxes(browser, svg, "[data-baseline-label]")) == []
    assert _overlaps(_boxes(browser, svg, ".mvp-legend-item text")) == []


def test_train_page_charts_in_the_browser(named_studio, open_as):
    page = open_as(named_studio.url, "rhea", "/train/")
    page.wait_for_selector("#train-runs-reward [data-x-tick]", timeout=60000)
    ticks = page.locator("#train-runs-reward [data-x-tick]").all_text_contents()
    assert ticks and all(t.isdigit() for t in ticks), ticks
    assert min(NO_SIGNAL_STEPS) <= int(ticks[0]) and int(ticks[-1]) <= max(NO_SIGNAL_STEPS)
    legend = page.locator("#train-runs-reward .mvp-legend-item").all_text_contents()
    assert legend == [GRPO]                 # the SFT run logs no reward: no entry for an empty line
    shot(page, "train-charts")


@pytest.mark.parametrize("level", [0.0, 0.2, 0.5, 0.95])
def test_baseline_labels_stand_clear_of_their_lines_in_chromium(browser, level):
    """A baseline's label stands clear of its dashed line: above it, or below when the line runs along
    the top (boxes as Chromium lays them out)."""
    svg = line_chart({"run": [(0, 0.1), (2, 0.3)], "chance": [(0, level), (2, level)]}, title="t", elem_id="c",
                     y_range=(0, 1), baselines=("chance",))
    label = _boxes(browser, svg, "[data-baseline-label]")[0]
    line = _boxes(browser, svg, "[data-baseline] polyline")[0]
    assert label["y"] + label["h"] <= line["y"] - 2 or label["y"] >= line["y"] + 2, (label, line)   # a clear gap

"""The same line chart drawn by each candidate Gradio can host, side by side in Chromium: the studio's
server-drawn SVG (app/web/svg_chart.py in a gr.HTML), gr.LinePlot (Vega-Lite in Gradio's front end),
gr.Plot with a Plotly figure and gr.Plot with an Altair chart (Vega-Lite through vega-embed).

Two series sets: "big" (5 runs x 2,000 steps) and "small" (5 runs x 60 steps). Each candidate gets a
small Gradio app of its own, built here, with three buttons: draw all runs, draw all but one (a run
hidden), draw all smoothed (the same five lines, new values). Per candidate and set:

  first_ms   from the click to the lines painted the first time (the library's code fetched then)
  redraw_ms  median click -> painted over the redraws (hide a run / show it again / smoothing), the
             paint seen in the next animation frame after the last series is in the DOM
  first_kb   bytes the browser received for the first draw (library chunks + data), from Chromium's
             network events (encoded, as on the wire); redraw_kb the median for one redraw
  heap_mb    JS heap in use after the big set is drawn, after a forced GC (not the peak)
  hover      a tooltip element shows a value when the pointer crosses the plot
  zoom       a drag across the plot changes the x axis range (LinePlot: its select event sets x_lim)
  legend_hide  clicking a legend entry hides its run in the browser, with no server round trip

Usage: python bench/web_charts.py [--redraws 6]"""
from __future__ import annotations

import argparse
import json
import math
import socket
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import gradio as gr  # noqa: E402  (module level: the select handler's gr.SelectData hint must resolve)

from bench.web_common import load_avg  # noqa: E402
from testkit.web import CHROMIUM, CHROMIUM_ARGS  # noqa: E402

RUNS = 5
SETS = {"big": 2000, "small": 60}
CANDIDATES = ("svg", "lineplot", "plotly", "altair")


def series(n_steps: int, weight: float = 0.0) -> dict[str, list[tuple[float, float]]]:
    from app.web.pages.train.explore import smooth
    out = {}
    for r in range(RUNS):
        vals = [0.2 + 0.1 * r + 0.5 * (1 - math.exp(-s / (n_steps / 4))) + 0.05 * math.sin(s * 0.37 + r)
                for s in range(n_steps)]
        out[f"run-{r}"] = list(zip(range(n_steps), smooth(vals, weight)))
    return out


def frame(data: dict[str, list[tuple[float, float]]]):
    import pandas as pd
    return pd.DataFrame([{"step": s, "value": v, "run": run} for run, pts in data.items() for s, v in pts])


def draw(kind: str, data: dict[str, list[tuple[float, float]]]):
    """The value each candidate's component is updated with."""
    if kind == "svg":
        from app.web.svg_chart import line_chart
        return gr.update(value=line_chart(data, title="value", elem_id="c-svg"))
    if kind == "lineplot":
        return gr.update(value=frame(data))
    if kind == "plotly":
        import plotly.graph_objects as go
        fig = go.Figure([go.Scatter(x=[s for s, _ in pts], y=[v for _, v in pts], name=run, mode="lines")
                         for run, pts in data.items()])
        fig.update_layout(height=320, margin=dict(l=40, r=10, t=10, b=30), hovermode="closest")
        return fig
    import altair as alt
    return (alt.Chart(frame(data)).mark_line().encode(x="step:Q", y="value:Q", color="run:N",
                                                      tooltip=["run", "step", "value"])
            .properties(height=300, width="container", usermeta={"embedOptions": {"renderer": "svg"}})
            .interactive(bind_y=False))


def app(kind: str, n_steps: int):
    with gr.Blocks() as demo:
        with gr.Row():
            full = gr.Button("all", elem_id="b-all")
            hide = gr.Button("hide", elem_id="b-hide")
            smoothed = gr.Button("smooth", elem_id="b-smooth")
        if kind == "svg":
            chart = gr.HTML(elem_id="c")
        elif kind == "lineplot":
            chart = gr.LinePlot(x="step", y="value", color="run", tooltip=["run", "step", "value"], elem_id="c",
                                height=320)

            def zoom(e: gr.SelectData):          # Gradio's brush: the x range dragged, as the studio does
                return gr.update(x_lim=list(e.index))
            chart.select(zoom, None, [chart])
        else:
            chart = gr.Plot(elem_id="c")
        full.click(lambda: draw(kind, series(n_steps)), None, [chart])
        hide.click(lambda: draw(kind, dict(list(series(n_steps).items())[1:])), None, [chart])
        smoothed.click(lambda: draw(kind, series(n_steps, 0.9)), None, [chart])
    return demo


# per candidate: the selector of one drawn series; its count says which draw is on screen
SERIES = {"svg": "#c g[data-series] polyline", "lineplot": "#c svg.marks g.mark-line path",
          "plotly": "#c .scatterlayer .trace", "altair": "#c svg.marks g.mark-line path"}
TOOLTIP = {"svg": None, "lineplot": "#vg-tooltip-element.visible", "plotly": "#c .hoverlayer .hovertext",
           "altair": "#vg-tooltip-element.visible"}
X_AXIS_JS = {   # the x axis's range as text, to see a zoom
    "svg": "() => [...document.querySelectorAll('#c [data-x-tick]')].map(e => e.textContent).join(',')",
    "lineplot": "() => document.querySelector(\"#c g[aria-label^='X-axis']\")?.getAttribute('aria-label')",
    "plotly": "() => [...document.querySelectorAll('#c .xtick text')].map(e => e.textContent).join(',')",
    "altair": "() => document.querySelector(\"#c g[aria-label^='X-axis']\")?.getAttribute('aria-label')"}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Bytes:
    """Bytes on the wire while a draw is under way, from Chromium's network events."""

    def __init__(self, page):
        self.total = 0
        self.cdp = page.context.new_cdp_session(page)
        self.cdp.send("Network.enable")
        self.cdp.on("Network.dataReceived", lambda e: self._add(e.get("encodedDataLength", 0)))

    def _add(self, n: int) -> None:
        self.total += n


def timed_click(page, button: str, selector: str, count: int) -> float:
    """ms from the click to the animation frame in which `count` series are drawn."""
    page.evaluate("b => { window.t0 = null; document.querySelector(b).addEventListener('click', "
                  "() => { window.t0 = performance.now(); }, {capture: true, once: true}); }", f"#{button}")
    page.click(f"#{button}")
    return page.wait_for_function(
        "([sel, n]) => window.t0 !== null && document.querySelectorAll(sel).length === n "
        "? performance.now() - window.t0 : false", arg=[selector, count], polling="raf", timeout=120000).json_value()


def measure(browser, kind: str, set_name: str, redraws: int) -> dict:
    port = free_port()
    demo = app(kind, SETS[set_name])
    demo.launch(server_name="127.0.0.1", server_port=port, prevent_thread_lock=True, quiet=True)
    page = browser.new_page(viewport={"width": 1280, "height": 900})
    try:
        page.goto(f"http://127.0.0.1:{port}/")
        page.wait_for_selector("#b-all")
        net = Bytes(page)
        sel = SERIES[kind]
        b0 = net.total
        first = timed_click(page, "b-all", sel, RUNS)
        page.wait_for_timeout(500)             # trailing bytes of the first draw
        first_kb = (net.total - b0) / 1024
        times, kbs = [], []
        for i in range(redraws):               # hide a run, show all, smoothed, hide, ...
            button, n = [("b-hide", RUNS - 1), ("b-smooth", RUNS), ("b-hide", RUNS - 1), ("b-all", RUNS)][i % 4]
            b0 = net.total
            times.append(timed_click(page, button, sel, n))
            page.wait_for_timeout(300)
            kbs.append((net.total - b0) / 1024)
        if page.query_selector_all(sel) and len(page.query_selector_all(sel)) != RUNS:
            timed_click(page, "b-all", sel, RUNS)
        net.cdp.send("HeapProfiler.collectGarbage")
        heap = net.cdp.send("Runtime.getHeapUsage")["usedSize"] / 2 ** 20
        row = {"candidate": kind, "set": f"{set_name} {RUNS}x{SETS[set_name]}", "first_ms": round(first),
               "redraw_ms": round(statistics.median(times)), "first_kb": round(first_kb),
               "redraw_kb": round(statistics.median(kbs)), "heap_mb": round(heap, 1)}
        row.update(features(page, kind))
        return row
    finally:
        page.close()
        demo.close()


def features(page, kind: str) -> dict:
    page.locator("#c").scroll_into_view_if_needed()
    box = (page.locator("#c svg.marks").bounding_box() if kind in ("lineplot", "altair") else
           page.locator("#c .nsewdrag").first.bounding_box() if kind == "plotly" else
           page.locator("#c svg").first.bounding_box())
    hover = False
    if TOOLTIP[kind]:
        for fx in (0.2, 0.35, 0.5, 0.65, 0.8):
            for fy in (0.3, 0.5, 0.7):
                page.mouse.move(box["x"] + box["width"] * fx, box["y"] + box["height"] * fy)
                page.wait_for_timeout(150)
                tip = page.query_selector(TOOLTIP[kind])
                if tip and any(ch.isdigit() for ch in (tip.text_content() or "")):
                    hover = True
                    break
            if hover:
                break
    before = page.evaluate(X_AXIS_JS[kind])
    y = box["y"] + box["height"] * 0.5
    if kind == "altair":                       # Altair's .interactive(): the wheel zooms, a drag pans
        page.mouse.move(box["x"] + box["width"] * 0.5, y)
        page.mouse.wheel(0, -300)
    else:
        page.mouse.move(box["x"] + box["width"] * 0.3, y)
        page.mouse.down()
        page.mouse.move(box["x"] + box["width"] * 0.6, y, steps=10)
        page.mouse.up()
    zoom = False
    for _ in range(30):
        page.wait_for_timeout(100)
        after = page.evaluate(X_AXIS_JS[kind])
        if after and after != before:
            zoom = True
            break
    legend_hide = False
    if kind == "plotly":
        page.locator("#c .legend .traces .legendtoggle").first.click(force=True)
        page.wait_for_timeout(500)
        legend_hide = len(page.query_selector_all(SERIES[kind])) == RUNS - 1 or \
            page.evaluate("() => [...document.querySelectorAll('#c .scatterlayer .trace')]"
                          ".some(t => getComputedStyle(t).opacity === '0' || t.style.opacity === '0')")
    return {"hover": hover, "zoom": zoom, "legend_hide": legend_hide}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--redraws", type=int, default=6)
    ap.add_argument("--only", choices=CANDIDATES, action="append")
    ap.add_argument("--sets", choices=list(SETS), action="append")
    args = ap.parse_args()
    from playwright.sync_api import sync_playwright
    rows = []
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS)
        try:
            for set_name in args.sets or SETS:
                for kind in args.only or CANDIDATES:
                    t = time.perf_counter()
                    rows.append(measure(browser, kind, set_name, args.redraws))
                    print(json.dumps(rows[-1]), f"({time.perf_counter() - t:.0f} s)", flush=True)
        finally:
            browser.close()
    cols = list(rows[0])
    print("\n" + " | ".join(cols))
    for r in rows:
        print(" | ".join(str(r[c]) for c in cols))
    print(f"load average: {load_avg()}")


if __name__ == "__main__":
    main()

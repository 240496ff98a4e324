"""Explore a metric of the past runs on the Train page with Gradio's own line plot (gr.LinePlot, Vega-Lite
in the browser): values on hover, zoom by selecting a range of steps (double-click or "Whole run"
resets), runs shown or hidden, and exponential smoothing. The other Train charts stay the studio's
SVG (app/web/svg_chart.py), which tests measure for tick and label layout.

The metric names are the keys the runs logged (metrics.jsonl, written through
mvp_core/train/tracking.py), read as they are: no second list of names to keep in step."""
from __future__ import annotations

import math
from dataclasses import dataclass

import gradio as gr
import pandas as pd

from app.web.common import WebContext, guard

PAGE = "train"
DEFAULT_METRIC = "reward"
NOT_METRICS = {"step"}


def smooth(values: list[float], weight: float) -> list[float]:
    """TensorBoard's smoothing: an exponential moving average, debiased so the first points are not
    pulled towards 0. weight 0 leaves the values as they are. Hand-written: five lines, and pandas'
    ewm(alpha=1-weight, adjust=True) is the same thing but drags a frame through for each run."""
    out, last, norm = [], 0.0, 0.0
    for v in values:
        last, norm = last * weight + (1 - weight) * v, norm * weight + (1 - weight)
        out.append(last / norm if norm else v)
    return out


def metric_names(runs: list[dict]) -> list[str]:
    names = {k for r in runs for row in r["metrics"] for k, v in row.items()
             if k not in NOT_METRICS and isinstance(v, (int, float)) and not isinstance(v, bool)}
    return sorted(names)


def frame(runs: list[dict], shown: list[str], metric: str, weight: float) -> pd.DataFrame:
    """One row per (run, step) of `metric` for the runs shown, smoothed; the raw value kept for the
    hover."""
    parts = []
    for r in runs:
        if r["id"] not in shown:
            continue
        pts = [(row["step"], float(row[metric])) for row in r["metrics"]
               if isinstance(row.get(metric), (int, float)) and math.isfinite(float(row[metric]))]
        if pts:
            steps, vals = zip(*pts)
            parts.append(pd.DataFrame({"step": steps, "value": smooth(list(vals), weight), "raw": vals,
                                       "run": r["id"]}))
    return pd.concat(parts) if parts else pd.DataFrame({"step": [], "value": [], "raw": [], "run": []})


@dataclass
class ExploreUI:
    metric: gr.Dropdown
    runs: gr.CheckboxGroup
    smoothing: gr.Slider
    whole: gr.Button
    plot: gr.LinePlot


def build_explore() -> ExploreUI:
    gr.Markdown("### Explore a metric (hover for values; select steps to zoom, double-click to reset)")
    with gr.Row():
        metric = gr.Dropdown(label="Metric", choices=[], elem_id="train-x-metric")
        smoothing = gr.Slider(0, 0.99, value=0.0, step=0.01, label="Smoothing", elem_id="train-x-smooth")
        whole = gr.Button("Whole run", size="sm", elem_id="train-x-whole", scale=0)
    runs = gr.CheckboxGroup(label="Runs shown", choices=[], elem_id="train-x-runs")
    plot = gr.LinePlot(x="step", y="value", color="run", tooltip=["run", "step", "value", "raw"],
                       elem_id="train-x-plot", height=320, x_title="step", y_title="value")
    return ExploreUI(metric, runs, smoothing, whole, plot)


def wire_explore(ui: ExploreUI, ctx: WebContext, page: gr.Blocks) -> None:
    from app.web.pages.train.runs import OVERLAY_DEFAULT, past_runs

    def fill(request: gr.Request):
        with guard(ctx, request, PAGE):
            runs = past_runs(ctx)
            names = metric_names(runs)
            metric = DEFAULT_METRIC if DEFAULT_METRIC in names else (names[0] if names else None)
            ids = [r["id"] for r in runs]
            shown = ids[:OVERLAY_DEFAULT]
            return [gr.update(choices=names, value=metric), gr.update(choices=ids, value=shown),
                    gr.update(value=frame(runs, shown, metric, 0.0) if metric else None, x_lim=None,
                              y_title=metric or "value")]

    def show(metric, shown, weight, request: gr.Request):
        with guard(ctx, request, PAGE):
            if not metric:
                return gr.update()
            return gr.update(value=frame(past_runs(ctx), list(shown or []), metric, float(weight or 0)),
                             y_title=metric)

    def zoom(evt: gr.SelectData):
        lo, hi = evt.index
        return gr.update(x_lim=[lo, hi])

    page.load(fill, None, [ui.metric, ui.runs, ui.plot])
    for c in (ui.metric, ui.runs):
        c.input(show, [ui.metric, ui.runs, ui.smoothing], [ui.plot])
    ui.smoothing.release(show, [ui.metric, ui.runs, ui.smoothing], [ui.plot])
    ui.plot.select(zoom, None, [ui.plot])
    ui.plot.double_click(lambda: gr.update(x_lim=None), None, [ui.plot])
    ui.whole.click(lambda: gr.update(x_lim=None), None, [ui.plot])

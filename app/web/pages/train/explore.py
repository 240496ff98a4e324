"""Explore a metric of the past runs on the Train page: a Plotly figure in gr.Plot (plotly.js, which
Gradio serves itself), drawn on the server from the runs' metrics and then explored in the browser
alone: values on hover (a tap on a phone), drag across the plot to zoom on a range of steps
(double-click or "Whole run" shows the whole run again), a click on a run's legend entry hides or
shows it. "Runs shown", the metric and "Smoothing" (TensorBoard's debiased moving average) redraw
from the server. The other Train charts stay the studio's SVG (app/web/svg_chart.py), which tests
measure for tick and label layout.

Why Plotly rather than Gradio's gr.LinePlot (Vega-Lite): measured in Chromium by bench/web_charts.py
(5 runs x 2,000 steps), LinePlot's zoom by selecting a range never showed in the browser and a redraw
took ~10 s and 102 MB of JS heap; Plotly redrew in ~0.6 s with 19 MB and gave hover, drag-to-zoom
and legend-click-to-hide with no server round trip. plotly is imported inside the handlers only, so
a server at rest (and any page not yet drawn) does not load it.

The figure's backgrounds are transparent and its text is coloured by static/studio.css from the
studio's theme variables, so it reads in the light and the dark theme (Gradio's Plotly component
takes no theme); the width follows the page (Gradio draws it autosized and responsive).

The metric names are the keys the runs logged (metrics.jsonl, written through
mvp_core/train/tracking.py), read as they are: no second list of names to keep in step."""
from __future__ import annotations

import itertools
import math
from dataclasses import dataclass

import gradio as gr

from app.web.common import WebContext, guard, on_latest

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


def series(runs: list[dict], shown: list[str], metric: str) -> dict[str, tuple[list, list[float]]]:
    """Per run shown, in the runs' order: its steps and finite values of `metric`."""
    out = {}
    for r in runs:
        if r["id"] not in shown:
            continue
        pts = [(row["step"], float(row[metric])) for row in r["metrics"]
               if isinstance(row.get(metric), (int, float)) and math.isfinite(float(row[metric]))]
        if pts:
            steps, vals = zip(*pts)
            out[r["id"]] = (list(steps), list(vals))
    return out


# One box for the step under the pointer, a line per run (TensorBoard's and W&B's tooltip): "step N" over
# "<run>: <smoothed> (raw <value>)", each after its run's colour. A run's name longer than NAME_CHARS loses
# its middle there (a run id's start and end tell runs apart; the legend keeps it whole): the box fits a phone.
HOVER = "%{meta}: <b>%{y:.4~g}</b> (raw %{customdata:.4~g})<extra></extra>"
NAME_CHARS = 24
GRID = "rgba(128, 128, 128, 0.3)"      # grid and axis lines: read on the light and the dark background alike
_draws = itertools.count(1)


def short(name: str) -> str:
    half = (NAME_CHARS - 1) // 2
    return name if len(name) <= NAME_CHARS else name[:half] + "…" + name[-(NAME_CHARS - 1 - half):]


def figure(runs: list[dict], shown: list[str], metric: str, weight: float):
    """The Plotly figure: one line per run shown, smoothed by `weight`, the raw values kept for the hover,
    both axes autoranged to the whole run. Its uirevision is new on every draw, so the figure differs
    even when nothing else does ("Whole run" after a zoom): Gradio draws it afresh and Plotly drops the
    zoom and the runs hidden in the browser."""
    import plotly.graph_objects as go

    from app.web.svg_chart import PALETTE
    traces = [go.Scatter(x=steps, y=smooth(vals, weight), customdata=vals, name=run, meta=short(run),
                         mode="lines", line=dict(width=2), hovertemplate=HOVER)
              for run, (steps, vals) in series(runs, shown, metric).items()]
    fig = go.Figure(traces)
    if not traces:
        fig.add_annotation(text=f"no run shown logged {metric}", showarrow=False, xref="paper", yref="paper",
                           x=0.5, y=0.5)
    axis = dict(gridcolor=GRID, zerolinecolor=GRID, linecolor=GRID, showline=True, autorange=True, automargin=True)
    fig.update_layout(
        template="none", colorway=list(PALETTE), height=360, margin=dict(l=8, r=8, t=28, b=8),
        paper_bgcolor="rgba(0,0,0,0)", plot_bgcolor="rgba(0,0,0,0)", font=dict(size=12),
        hovermode="x unified", dragmode="zoom", uirevision=next(_draws),
        xaxis=dict(axis, title=dict(text="step", standoff=8), unifiedhovertitle=dict(text="step %{x}")),
        yaxis=dict(axis, title=dict(text=metric, standoff=8)),
        showlegend=True,     # under the plot, left to right: it never covers a line
        legend=dict(orientation="h", x=0, xanchor="left", y=-0.18, yanchor="top", bgcolor="rgba(0,0,0,0)"),
        modebar=dict(bgcolor="rgba(0,0,0,0)"))
    return fig


@dataclass
class ExploreUI:
    metric: gr.Dropdown
    runs: gr.CheckboxGroup
    smoothing: gr.Slider
    whole: gr.Button
    plot: gr.Plot


def build_explore() -> ExploreUI:
    gr.Markdown("### Explore a metric\nHover (or tap) for values; drag across the plot to zoom on some steps, "
                "double-click or \"Whole run\" to see the whole run; click a run in the legend to hide or show it.")
    with gr.Row():
        metric = gr.Dropdown(label="Metric", choices=[], elem_id="train-x-metric")
        smoothing = gr.Slider(0, 0.99, value=0.0, step=0.01, label="Smoothing", elem_id="train-x-smooth")
        whole = gr.Button("Whole run", size="sm", elem_id="train-x-whole", scale=0)
    runs = gr.CheckboxGroup(label="Runs shown", choices=[], elem_id="train-x-runs")
    plot = gr.Plot(label="metric", show_label=False, elem_id="train-x-plot")
    return ExploreUI(metric, runs, smoothing, whole, plot)


def wire_explore(ui: ExploreUI, ctx: WebContext, loaded: gr.events.Dependency) -> None:
    from app.web.pages.train.runs import OVERLAY_DEFAULT, past_runs

    def fill(request: gr.Request):
        with guard(ctx, request, PAGE):
            runs = past_runs(ctx)
            names = metric_names(runs)
            metric = DEFAULT_METRIC if DEFAULT_METRIC in names else (names[0] if names else None)
            ids = [r["id"] for r in runs]
            shown = ids[:OVERLAY_DEFAULT]
            return [gr.update(choices=names, value=metric), gr.update(choices=ids, value=shown),
                    figure(runs, shown, metric, 0.0) if metric else None]

    def show(metric, shown, weight, request: gr.Request):
        """A new figure: a metric, the runs shown or the smoothing changed, or "Whole run" (autoranged)."""
        with guard(ctx, request, PAGE):
            if not metric:
                return gr.update()
            return figure(past_runs(ctx), list(shown or []), metric, float(weight or 0))

    inputs = [ui.metric, ui.runs, ui.smoothing]
    loaded.then(fill, None, [ui.metric, ui.runs, ui.plot], show_progress="hidden")
    on_latest([ui.metric.input, ui.runs.input, ui.smoothing.release, ui.whole.click], show, inputs, [ui.plot])

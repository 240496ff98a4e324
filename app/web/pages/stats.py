"""The stats page: the store's DuckDB analytics (db/analytics/) as charts and tables, plus the
curation progress. Researchers and admins. Each question is one function of the store; the page
only shapes the rows into DataFrames for Gradio's native plots."""
from __future__ import annotations

import gradio as gr
import pandas as pd

from app.web.common import WebContext, guard, nav_html

PAGE = "stats"

# (question, title, bar chart x, bar chart y); the table always shows every column.
CHARTS = [
    ("acceptance_by_kind", "Distractor keep rate by kind", "kind", "keep_rate"),
    ("acceptance_by_hardness", "Distractor keep rate by difficulty", "bin", "keep_rate"),
    ("acceptance_by_video", "Puzzle accept rate by video", "video_id", "accept_rate"),
    ("curator_throughput", "Verdicts per curator and day", "curator", "verdicts"),
    ("curator_agreement", "Agreement between curators (Cohen's kappa)", "pair", "kappa"),
    ("model_picks_by_kind", "What the model picks, by option kind", "kind", "picks"),
]


def frames(ctx: WebContext) -> dict[str, pd.DataFrame]:
    """question -> its rows as a DataFrame (with the chart's x column added where it is derived)."""
    from db import analytics
    engine = ctx.Session.kw["bind"]
    out = {}
    for q, _title, _x, _y in CHARTS:
        fn = analytics.QUESTIONS.get(q)
        df = pd.DataFrame(fn(engine) if fn is not None else [])
        if q == "acceptance_by_hardness" and len(df):
            df["bin"] = [f"{lo:.2f}-{hi:.2f}" for lo, hi in zip(df["lo"], df["hi"])]
        if q == "curator_agreement" and len(df):
            df["pair"] = df["a"] + " / " + df["b"]
        if q == "curator_throughput" and len(df):
            df["day"] = df["day"].astype(str)
        out[q] = df
    return out


def progress_frame(ctx: WebContext) -> pd.DataFrame:
    from db.review import progress
    with ctx.Session() as s:
        p = progress(s)
    rows = [{"status": k, "puzzles": v} for k, v in sorted(p["everyone"]["by_status"].items())]
    return pd.DataFrame(rows or [{"status": "pending", "puzzles": 0}])


def build(ctx: WebContext) -> gr.Blocks:
    with gr.Blocks(title="MVP Studio · Stats") as demo:
        nav = gr.HTML()
        refresh = gr.Button("Refresh", elem_id="stats-refresh")
        status_plot = gr.BarPlot(x="status", y="puzzles", title="Puzzles by review status", elem_id="stats-status",
                                 y_lim=[0, None])
        widgets = []
        for q, title, x, y in CHARTS:
            with gr.Row(elem_id=f"stats-{q}"):
                rate = y in ("keep_rate", "accept_rate", "kappa")
                plot = gr.BarPlot(x=x, y=y, title=title, scale=1, y_lim=[0, 1] if rate else [0, None])
                table = gr.Dataframe(label=title, interactive=False, scale=1)
            widgets += [plot, table]

        def load(request: gr.Request):
            with guard(ctx, request, PAGE):
                dfs = frames(ctx)
                vals = []
                for q, _t, _x, _y in CHARTS:
                    df = dfs[q]
                    vals += [df.copy() if len(df) else None,   # the plot may change its frame
                             df if len(df) else pd.DataFrame({"note": ["no data yet"]})]
                return [nav_html(ctx, request.username, PAGE), progress_frame(ctx), *vals]
        demo.load(load, None, [nav, status_plot, *widgets])
        refresh.click(load, None, [nav, status_plot, *widgets], api_name="stats")
    return demo

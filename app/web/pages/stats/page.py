"""The stats page: the store's DuckDB analytics (db/analytics/) as charts and tables, plus the
curation progress. Researchers and admins. Each question is one function of the store; the page
shapes its rows into a server-drawn bar chart (app/web/svg_chart.py: an empty one says what produces
its data, where Gradio's empty plots showed a blank frame or "Infinity" axes) and a table. Videos
are named by file name, never by hash."""
from __future__ import annotations

import gradio as gr
import pandas as pd

from app.web.common import WebContext, esc, guard, nav_html, page_blocks
from app.web.pages.stats import eval as stats_eval
from app.web.svg_chart import bar_chart

PAGE = "stats"

# (question, title, bar chart x, bar chart y, what produces its data: said when there is none);
# the table below each chart shows every column.
CHARTS = [
    ("acceptance_by_kind", "Distractor keep rate by kind", "kind", "keep_rate",
     "No option verdicts yet: curators keep or reject distractors on the Curate page."),
    ("acceptance_by_hardness", "Distractor keep rate by difficulty", "bin", "keep_rate",
     "No option verdicts yet: curators keep or reject distractors on the Curate page."),
    ("acceptance_by_video", "Puzzle accept rate by video", "video", "accept_rate",
     "No puzzle verdicts yet: curators accept or reject puzzles on the Curate page."),
    ("curator_throughput", "Verdicts per curator and day", "curator", "verdicts",
     "No verdicts yet: curators judge puzzles on the Curate page."),
    ("curator_agreement", "Agreement between curators (Cohen's kappa)", "pair", "kappa",
     "No agreement yet: it needs two curators judging the same puzzles (set the overlap to 2 or more "
     "with `mvp db set-overlap 2`)."),
    ("model_picks_by_kind", "What the model picks, by option kind", "kind", "picks",
     "No model answers yet: evaluate a checkpoint (a rollout job) on the Rollouts page, or run "
     "`mvp rollout --run RUN --checkpoint C --set NAME`."),
]
RATES = ("keep_rate", "accept_rate", "kappa")


def frames(ctx: WebContext) -> dict[str, pd.DataFrame]:
    """question -> its rows as a DataFrame (with the chart's x column added where it is derived)."""
    from db import analytics
    from db.review.browse import video_names
    engine = ctx.Session.kw["bind"]
    with ctx.Session() as s:
        names = video_names(s)
    out = {}
    for q, *_ in CHARTS:
        fn = analytics.QUESTIONS.get(q)
        df = pd.DataFrame(fn(engine) if fn is not None else [])
        if q == "acceptance_by_hardness" and len(df):
            df["bin"] = [f"{lo:.2f}-{hi:.2f}" for lo, hi in zip(df["lo"], df["hi"])]
        if q == "curator_agreement" and len(df):
            df["pair"] = df["a"] + " / " + df["b"]
        if q == "acceptance_by_video" and len(df):      # videos by file name, never by hash
            df.insert(0, "video", [names.get(v, v) for v in df["video_id"]])
            df = df.drop(columns=["video_id"])
        if q == "curator_throughput" and len(df):
            df["day"] = df["day"].astype(str)
        out[q] = df
    return out


def status_chart(ctx: WebContext) -> str:
    from db.review import progress
    with ctx.Session() as s:
        p = progress(s)
    bars = [(k, v) for k, v in sorted(p["everyone"]["by_status"].items()) if v]
    return bar_chart(bars, title="Puzzles by review status", elem_id="stats-status-chart",
                     empty="No puzzles yet: synthesize some on the Data page (or `mvp synth`).")


def _cell(v) -> str:
    if isinstance(v, float):
        return "" if v != v else f"{v:.4g}"
    return esc("" if v is None else v)


def question_html(q: str, title: str, x: str, y: str, empty: str, df: pd.DataFrame) -> str:
    """One question: its bar chart and its table, or the sentence saying what produces its data."""
    bars = list(zip(df[x], df[y])) if len(df) and x in df and y in df else []
    chart = bar_chart(bars, title=title, elem_id=f"stats-{q}-chart", y_max=1.0 if y in RATES else None,
                      empty=empty)
    table = _table(f"stats-{q}-table", list(df.columns), [[_cell(v) for v in r] for r in df.itertuples(index=False)],
                   empty) if len(df) else ""
    return f'<div class="mvp-stats-q" data-rows="{len(df)}">{chart}{table}</div>'


def _table(elem_id: str, headers: list[str], rows: list[list], empty: str) -> str:
    if not rows:
        return f'<div class="mvp-data" id="{elem_id}"><i>{esc(empty)}</i></div>'
    head = "".join(f"<th>{esc(h)}</th>" for h in headers)
    body = "".join("<tr>" + "".join(f"<td>{c}</td>" for c in r) + "</tr>" for r in rows)
    return f'<table class="mvp-table" id="{elem_id}"><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>'


def _ci(v, ci) -> str:
    if v is None:
        return ""
    return f"{v:.3f}" + (f" [{ci[0]:.3f}, {ci[1]:.3f}]" if ci and ci[0] is not None and ci[0] == ci[0] else "")


def human_html(ctx: WebContext) -> str:
    """The verdict count (the one definition), humans beside the shortcut solvers and the model, the
    human baseline per video, and the puzzles humans fail (possibly ambiguous)."""
    from db.runs.baselines import compare
    from db.review.human import per_video, possibly_ambiguous
    from db.review import progress
    with ctx.Session() as s:
        prog = progress(s)
        rows = compare(s, ctx.data_dir)
        videos = per_video(s)
        amb = possibly_ambiguous(s)
    skips = prog["everyone"].get("skips", 0)
    head = (f'<p id="stats-verdicts">{prog["everyone"]["verdicts"]} verdicts (accept or reject; '
            f'{skips} skips, which are not verdicts) on {prog["everyone"]["reviewed"]} of {prog["total"]} '
            f'puzzles reviewed</p>')
    base = _table("stats-baselines", ["solver", "puzzles", "exact match [95% CI]", "reward [95% CI]"],
                  [[esc(r["solver"]), r["puzzles"], _ci(r["exact"], r["exact_ci"]), _ci(r["reward"], r["reward_ci"])]
                   for r in rows], "no human answers yet: curators answer each puzzle before vetting it")
    vids = _table("stats-human-by-video", ["video", "puzzles", "answers", "human exact [95% CI]",
                                           "human reward [95% CI]", "possibly ambiguous"],
                  [[esc(v["video"]), v["puzzles"], v["answers"], _ci(v["exact"], v["exact_ci"]),
                    _ci(v["reward"], v["reward_ci"]), v["possibly_ambiguous"]] for v in videos], "no answers yet")
    flags = _table("stats-ambiguous", ["puzzle", "video", "answers", "human exact"],
                   [[f'<a href="/curate/?puzzle={esc(r["puzzle_id"])}"><code>{esc(r["puzzle_id"])}</code></a>',
                     esc(r["video"]), r["answers"], f'{r["exact"]:.2f}'] for r in amb], "none flagged")
    return (f'<div class="mvp-data">{head}<h3>Baselines on the puzzles curators answered</h3>{base}'
            f'<h3>Human baseline per video</h3>{vids}'
            f'<h3>Possibly ambiguous (most curators answered wrong)</h3>{flags}</div>')


def build(ctx: WebContext) -> gr.Blocks:
    with page_blocks("Stats") as demo:
        nav = gr.HTML()
        refresh = gr.Button("Refresh", elem_id="stats-refresh")
        humans = gr.HTML(elem_id="stats-humans")
        status_plot = gr.HTML(elem_id="stats-status")
        widgets = [gr.HTML(elem_id=f"stats-{q}") for q, *_ in CHARTS]

        def load(request: gr.Request):
            with guard(ctx, request, PAGE):
                dfs = frames(ctx)
                return [nav_html(ctx, request.username, PAGE), status_chart(ctx),
                        *[question_html(q, t, x, y, e, dfs[q]) for q, t, x, y, e in CHARTS]]

        def load_humans(request: gr.Request):       # its own event: the solvers read frames
            with guard(ctx, request, PAGE):
                return human_html(ctx)
        demo.load(load, None, [nav, status_plot, *widgets])
        demo.load(load_humans, None, [humans])
        stats_eval.include(ctx, demo)      # eval results per checkpoint (app/web/pages/stats/eval.py)
        refresh.click(load, None, [nav, status_plot, *widgets], api_name="stats")
        refresh.click(load_humans, None, [humans], api_name="stats_humans")
    return demo

"""Eval results per checkpoint (stored `mvp eval` reports, db/runs/evaluations.py) for the Stats and
Rollouts pages: exact match and mean reward of each run checkpoint with 95% bootstrap intervals,
beside chance and the shortcut solvers on the same puzzles, by distractor kind and by hardness,
and plotted against the checkpoint's step (baselines dashed)."""
from __future__ import annotations

import gradio as gr

from app.web.common import WebContext, esc, guard
from app.web.svg_chart import line_chart
from mvp_core.stats.bootstrap import ci

PAGE = "stats"
EMPTY = ("No evaluations yet: evaluate a checkpoint on the Rollouts page (Evaluate a checkpoint) or run "
         "`mvp eval --run RUN --checkpoint C --set NAME --split test`.")


def load(Session) -> tuple[list[dict], dict[str, dict]]:
    """The stored evals, and the curators' blind answers on each evaluated set split (db/review/human.py):
    read now, so humans who answer after an eval still appear beside it."""
    from db.runs.evaluations import list_evaluations
    from db.review.human import human_baseline
    from mvp_core.errors import UserError
    with Session() as s:
        evals = list_evaluations(s)
        humans = {}
        for e in evals:
            key = _split_key(e)
            if e["set_name"] and key not in humans:
                try:
                    humans[key] = human_baseline(s, e["set_name"], e["split"] or None)
                except UserError:      # the set was deleted since: no baseline to show
                    pass
        return evals, humans


def _split_key(e: dict) -> str:
    return f"{e['set_name']}" + (f" / {e['split']}" if e["split"] else "")


def _humans_row(h: dict | None) -> str:
    """The curators' row: on the split's puzzles they answered blind (n says how many)."""
    if h is None:
        return ""
    if not h["puzzles"]:
        return ('<tr class="mvp-baseline mvp-humans"><td>humans (curators, blind)</td><td>0</td>'
                '<td colspan="2">no curator has answered a puzzle of this split yet (Curate: solve first)</td></tr>')
    (elo, ehi), (rlo, rhi) = h["exact_ci"], h["reward_ci"]
    return (f'<tr class="mvp-baseline mvp-humans"><td>humans (curators, blind)</td><td>{h["puzzles"]}</td>'
            f'<td>{h["exact"]:.3f} <span class="mvp-cap">[{elo:.2f}, {ehi:.2f}]</span></td>'
            f'<td>{h["reward"]:.3f} <span class="mvp-cap">[{rlo:.2f}, {rhi:.2f}]</span></td></tr>')


def summary_html(evals: list[dict], humans: dict[str, dict] | None = None) -> str:
    """One table per set split: each checkpoint's exact and reward (with intervals), then the
    baselines: the curators (`humans`, by split key), chance and the shortcut solvers."""
    if not evals:
        return f'<p id="eval-results" data-evals="0">{esc(EMPTY)}</p>'
    out = [f'<div id="eval-results" data-evals="{len(evals)}">']
    for key in sorted({_split_key(e) for e in evals}):
        group = [e for e in evals if _split_key(e) == key]
        rows = []
        for e in group:
            ps = e["report"].get("puzzles", [])
            # intervals resample videos; a report stored before it carried video ids counts each puzzle alone
            videos = [p.get("video_id", p["id"]) for p in ps]
            ex_ci = ci([p["model_exact"] for p in ps], videos)
            rw_ci = ci([p["model_total"] for p in ps], videos)
            rows.append(f'<tr data-eval="{e["id"]}" data-run="{esc(e["run_id"])}" data-checkpoint="{esc(e["checkpoint"])}">'
                        f'<td><code>{esc(e["run_id"])}</code> · {esc(e["checkpoint"])}</td><td>{e["n_puzzles"]}</td>'
                        f'<td class="mvp-exact">{e["exact"]:.3f} <span class="mvp-cap">[{ex_ci[0]:.2f}, {ex_ci[1]:.2f}]</span></td>'
                        f'<td class="mvp-reward">{e["total"]:.3f} <span class="mvp-cap">[{rw_ci[0]:.2f}, {rw_ci[1]:.2f}]</span></td></tr>')
        last = group[-1]["report"]
        allg = last["groups"]["all"]
        rows.append(_humans_row((humans or {}).get(key)))
        rows.append(f'<tr class="mvp-baseline"><td>chance</td><td>{last["n_puzzles"]}</td>'
                    f'<td>{allg["chance_exact"]:.3f}</td><td>-</td></tr>')
        for name in last["systems"]:
            if name != "model":
                rows.append(f'<tr class="mvp-baseline"><td>shortcut: {esc(name)}</td><td>{last["n_puzzles"]}</td>'
                            f'<td>{allg[name]["exact"]:.3f}</td><td>{allg[name]["total"]:.3f}</td></tr>')
        out.append(f'<h4>{esc(key)}</h4><table class="mvp-table"><tr><th>model version</th><th>n</th>'
                   f'<th>exact [95% CI]</th><th>reward [95% CI]</th></tr>{"".join(rows)}</table>')
    out.append("</div>")
    return "".join(out)


def by_group_html(evals: list[dict]) -> str:
    """Exact / reward of each checkpoint and each baseline, by distractor kind and hardness."""
    if not evals:
        return ""
    groups = sorted({g for e in evals for g in e["report"]["groups"]}, key=lambda g: (g != "all", g))
    base_names = [n for n in evals[-1]["report"]["systems"] if n != "model"]
    head = "".join(f"<th>{esc(e['run_id'])} · {esc(e['checkpoint'])}<br><span class='mvp-cap'>{esc(_split_key(e))}</span></th>"
                   for e in evals) + "".join(f"<th>{esc(n)}</th>" for n in base_names)
    body = []
    for g in groups:
        cells = []
        for e in evals:
            v = e["report"]["groups"].get(g)
            cells.append(f"<td>{v['model']['exact']:.2f} / {v['model']['total']:.2f} <span class='mvp-cap'>n={v['n']}</span></td>"
                         if v else "<td>-</td>")
        last = evals[-1]["report"]["groups"].get(g)
        cells += [f"<td>{last[n]['exact']:.2f} / {last[n]['total']:.2f}</td>" if last else "<td>-</td>"
                  for n in base_names]
        body.append(f'<tr data-group="{esc(g)}"><td>{esc(g)}</td>{"".join(cells)}</tr>')
    return (f'<table id="eval-by-group" class="mvp-table"><tr><th>group (exact / reward)</th>{head}</tr>'
            f'{"".join(body)}</table>')


def chart_html(evals: list[dict], metric: str = "total", humans: dict[str, dict] | None = None) -> str:
    """`metric` (total or exact) per checkpoint step, one chart per run (a step of one run is not a
    step of another: an SFT run's step 2 and a GRPO run's step 2 share no axis), a line per set split;
    the baselines of the run's latest split (its curators, chance, the shortcut solvers) as labelled
    reference levels. Wrapped in one element carrying the total point count."""
    title = "Held-out reward per checkpoint" if metric == "total" else "Held-out exact match per checkpoint"
    if not evals:
        return line_chart({}, title=title, elem_id=f"eval-chart-{metric}", empty="no evaluations yet")
    runs: dict[str, list[dict]] = {}
    for e in evals:
        runs.setdefault(e["run_id"], []).append(e)
    charts, n = [], 0
    for i, (run_id, group) in enumerate(runs.items()):
        series: dict[str, list[tuple[float, float]]] = {}
        for e in group:
            series.setdefault(_split_key(e), []).append((float(e["step"] or 0), float(e[metric])))
        n += sum(len(v) for v in series.values())
        steps = [x for pts in series.values() for x, _ in pts]
        lo, hi = min(steps), max(max(steps), min(steps) + 1)
        last = group[-1]
        rep = last["report"]["groups"]["all"]
        base = {}
        h = (humans or {}).get(_split_key(last))
        if h and h["puzzles"]:
            base["humans"] = h["exact"] if metric == "exact" else h["reward"]
        if metric == "exact":
            base["chance"] = rep["chance_exact"]
        for name in last["report"]["systems"]:
            if name != "model":
                base[f"shortcut {name}"] = rep[name][metric]
        series.update({k: [(lo, v), (hi, v)] for k, v in base.items()})
        charts.append(line_chart(series, title=f"{title} · run {run_id}", elem_id=f"eval-chart-{metric}-{i}",
                                 y_range=(0, 1), x_label="checkpoint step (0 = start model)",
                                 baselines=tuple(base)))
    return f'<div class="mvp-chart-group" id="eval-chart-{metric}" data-points="{n}">{"".join(charts)}</div>'


def build_eval_section(ctx: WebContext, page: str = PAGE) -> tuple[list, object]:
    """The section's components and its fill function (for a page's load event / a refresh)."""
    gr.Markdown("### Evaluations per checkpoint (vs. the shortcut baselines)")
    summary = gr.HTML(elem_id=f"{page}-eval-summary")
    with gr.Row():
        c_reward = gr.HTML(elem_id=f"{page}-eval-chart-reward")
        c_exact = gr.HTML(elem_id=f"{page}-eval-chart-exact")
    groups = gr.HTML(elem_id=f"{page}-eval-groups")

    def fill(request: gr.Request):
        with guard(ctx, request, page):
            ev, humans = load(ctx.Session)
            return [summary_html(ev, humans), chart_html(ev, "total", humans), chart_html(ev, "exact", humans),
                    by_group_html(ev)]
    return [summary, c_reward, c_exact, groups], fill


def include(ctx: WebContext, demo: gr.Blocks) -> None:
    """The section in a page's Blocks, filled on page load (the Stats page's one-line include)."""
    outputs, fill = build_eval_section(ctx)
    demo.load(fill, None, outputs)

"""The Train page's lower half: every past training run (indexed from DATA/runs/, db/runs/index.py) in a
table, their training-reward and held-out eval-reward curves overlaid, and one run's sampled
completions per step (the run's completions/step_N.parquet) with each reward term and advantage."""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import gradio as gr

from app.web.common import WebContext, esc, guard
from app.web.pages.train import signals
from app.web.svg_chart import line_chart

PAGE = "train"
OVERLAY_DEFAULT = 5


@dataclass
class RunsSection:
    load: object            # the handler filling the section: syncs DATA/runs/ into the index first
    show: object            # the same from the index as it is, for a caller that has just synced it
    outputs: list


def past_runs(ctx: WebContext) -> list[dict]:
    from db.runs.index import TRAIN_KINDS, list_runs
    from db.runs.names import start_name
    from mvp_core.train.rundir import read_metrics
    with ctx.Session() as s:
        runs = list_runs(s, TRAIN_KINDS)
        for r in runs:
            r["start"] = start_name(s, r["model_path"])
    for r in runs:
        r["metrics"] = read_metrics(r["dir"]) if r["dir"] and Path(r["dir"]).is_dir() else []
    return runs


def runs_table(runs: list[dict]) -> str:
    if not runs:
        return '<p id="train-runs-table" data-runs="0">No training runs yet: launch one above.</p>'
    rows = []
    for r in runs:
        m = r["metrics"]
        last = m[-1] if m else {}
        ev = [x["eval_reward"] for x in m if x.get("eval_reward") is not None]
        cells = [f'<code>{esc(r["id"])}</code>', esc(r["kind"]), esc(r["status"]), esc(r["set_name"] or "-"),
                 esc(r["config"].get("reward", "-")), str(last.get("step", 0)),
                 f'{last["reward"]:.3f}' if "reward" in last else "-", f"{ev[-1]:.3f}" if ev else "-",
                 str(r["n_checkpoints"]), esc(r["start"]), signals.badges_html(m), tracking_cell(r)]
        rows.append(f'<tr data-run="{esc(r["id"])}">' + "".join(f"<td>{c}</td>" for c in cells) + "</tr>")
    return (f'<table id="train-runs-table" class="mvp-table" data-runs="{len(runs)}"><tr><th>run</th><th>kind</th>'
            '<th>status</th><th>set</th><th>reward fn</th><th>step</th><th>last reward</th><th>held-out reward</th>'
            f'<th>checkpoints</th><th>started from</th><th>learning signal</th><th>tracking</th></tr>{"".join(rows)}</table>')


def tracking_cell(r: dict) -> str:
    """Where the run also reported (`report_to`, mvp_core/train/tracking.py): TensorBoard runs its own
    server, so the cell gives the command that opens this run's event files; the others name the
    tracker (their runs carry the run id and the set hash)."""
    given = r["config"].get("report_to") or []
    names = [n for n in (given.split(",") if isinstance(given, str) else given) if n and n != "none"]
    if not names:
        return "-"
    out = []
    for n in names:
        if n == "tensorboard" and r["dir"] and (Path(r["dir"]) / "tensorboard").is_dir():
            out.append(f'<code class="mvp-tb">tensorboard --logdir {esc(str(Path(r["dir"]) / "tensorboard"))}</code>')
        else:
            out.append(esc(n))
    return "<br>".join(out)


def overlay_charts(runs: list[dict], picked: list[str]) -> tuple[str, str]:
    chosen = [r for r in runs if r["id"] in set(picked)]
    train = {r["id"]: [(x["step"], x["reward"]) for x in r["metrics"] if "reward" in x] for r in chosen}
    held = {r["id"]: [(x["step"], x["eval_reward"]) for x in r["metrics"] if x.get("eval_reward") is not None]
            for r in chosen}
    return (line_chart(train, title="Training reward per step", elem_id="train-runs-reward", y_range=(0, 1),
                       empty="pick runs to overlay"),
            line_chart({k: v for k, v in held.items() if v}, title="Held-out eval reward per step",
                       elem_id="train-runs-eval", y_range=(0, 1),
                       empty="no held-out eval logged by these runs (set eval_steps)"))


def completion_steps(run_dir: str) -> list[int]:
    d = Path(run_dir) / "completions"
    return sorted(int(p.stem.split("_")[1]) for p in d.glob("step_*.parquet")) if d.is_dir() else []


def completions_html(run_dir: str | None, step: int | None) -> str:
    if not run_dir or step is None:
        return '<p id="train-completions" data-rows="0">Pick a run and a step.</p>'
    import pyarrow.parquet as pq
    f = Path(run_dir) / "completions" / f"step_{int(step):06d}.parquet"
    if not f.is_file():
        return f'<p id="train-completions" data-rows="0">No completions file for step {int(step)}.</p>'
    # the one scored-completion schema (mvp_core/model/rollout.py); runs written before it said sample/labels/reward
    rows = [dict(r, sample_index=r.get("sample_index", r.get("sample", 0)), total=r.get("total", r.get("reward")),
                 chosen_labels=r.get("chosen_labels", r.get("labels")) or []) for r in pq.read_table(f).to_pylist()]
    rows.sort(key=lambda r: (r["puzzle_id"], r["sample_index"]))
    terms = ("format", "selection", "order", "exact", "total", "advantage")
    body = "".join(
        f'<tr><td><code>{esc(r["puzzle_id"])}</code></td><td>{r["sample_index"]}</td>'
        f'<td class="mvp-think">{esc(r["completion"])}</td><td>{esc(", ".join(r["chosen_labels"]))}</td>'
        + "".join(f'<td>{float(r[t]):+.3f}</td>' if t == "advantage" else f'<td>{float(r[t]):.2f}</td>'
                  for t in terms if t in r) + "</tr>" for r in rows)
    head = "".join(f"<th>{t}</th>" for t in terms if t in rows[0]) if rows else ""
    return (f'<table id="train-completions" class="mvp-table" data-rows="{len(rows)}"><tr><th>puzzle</th><th>#</th>'
            f'<th>completion</th><th>labels</th>{head}</tr>{body}</table>')


def _steps_and_table(run_dir: str | None, steps: list[int] | None = None) -> list:
    """[the Step picker's update, the completions table]: a run's steps with completions (`steps` when the
    caller has listed them), the last one chosen and shown."""
    if steps is None:
        steps = completion_steps(run_dir) if run_dir else []
    last = steps[-1] if steps else None
    return [gr.update(choices=steps, value=last), completions_html(run_dir, last)]


def build_runs_section(ctx: WebContext) -> RunsSection:
    gr.Markdown("### Past runs")
    table = gr.HTML(elem_id="train-runs")
    picked = gr.CheckboxGroup(label="Overlay the curves of", choices=[], elem_id="train-runs-pick")
    with gr.Row():
        reward_chart = gr.HTML(elem_id="train-runs-reward-box")
        eval_chart = gr.HTML(elem_id="train-runs-eval-box")
    refresh = gr.Button("Refresh runs", elem_id="train-runs-refresh", size="sm")
    gr.Markdown("### Sampled completions per step (the run's Parquet files)")
    with gr.Row():
        c_run = gr.Dropdown(label="Run", choices=[], elem_id="train-c-run")
        c_step = gr.Dropdown(label="Step", choices=[], elem_id="train-c-step")
    c_table = gr.HTML(elem_id="train-completions-box")

    def load(request: gr.Request):
        with guard(ctx, request, PAGE):
            from db.runs.index import sync_runs
            sync_runs(ctx.Session, ctx.data_dir)
        return show(request)

    def show(request: gr.Request):
        """The section from the index as it is: the table, the newest runs' curves overlaid, and the
        completions of the first run that has some at its last step. The pickers' dependents are filled
        here, not by their own events: a value set by an answer fires no `.input`, so the page's load
        is one answer (docs/web.md, "Pickers a load fills")."""
        with guard(ctx, request, PAGE):
            runs = past_runs(ctx)
            ids = [r["id"] for r in runs]
            pick = ids[:OVERLAY_DEFAULT]
            with_files = [(r, steps) for r in runs if (steps := completion_steps(r["dir"]))]
            first, steps = with_files[0] if with_files else (None, [])
            return [runs_table(runs), gr.update(choices=ids, value=pick), *overlay_charts(runs, pick),
                    gr.update(choices=[r["id"] for r, _ in with_files], value=first["id"] if first else None),
                    *_steps_and_table(first["dir"] if first else None, steps)]

    def on_pick(ids, request: gr.Request):
        with guard(ctx, request, PAGE):
            return overlay_charts(past_runs(ctx), ids or [])

    def _dir(run_id):
        from db.models.runs import Run
        with ctx.Session() as s:
            r = s.get(Run, run_id) if run_id else None
            return r.dir if r else None

    def on_run(run_id, request: gr.Request):
        """[step, completions] of a picked run: its steps with completions, the last one shown."""
        with guard(ctx, request, PAGE):
            return _steps_and_table(_dir(run_id) if run_id else None)

    def on_step(run_id, step, request: gr.Request):
        with guard(ctx, request, PAGE):
            return completions_html(_dir(run_id), step)

    outputs = [table, picked, reward_chart, eval_chart, c_run, c_step, c_table]
    refresh.click(load, None, outputs, api_name="train_runs")
    # `.input`: a person's pick (the section's own answers fill the pickers and what they show: `show`)
    picked.input(on_pick, [picked], [reward_chart, eval_chart])
    c_run.input(on_run, [c_run], [c_step, c_table])
    c_step.input(on_step, [c_run, c_step], [c_table], api_name="train_completions")
    return RunsSection(load=load, show=show, outputs=outputs)

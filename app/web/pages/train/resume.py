"""Resume a stopped run from the Train page: the stopped (or failed) runs of DATA/runs/ that hold a
complete checkpoint, and one button naming the run and the checkpoint it continues from
(app/web/jobs.py `resume`: `mvp train --resume` in the same run directory)."""
from __future__ import annotations

from dataclasses import dataclass

import gradio as gr

from app.web import jobs
from app.web.common import WebContext, esc, guard, msg_html

PAGE = "train"


def stopped_runs(ctx: WebContext) -> list[tuple[str, str, int]]:
    """(run id, run directory, checkpoint step) of every run that can be resumed, newest first."""
    from db.runs.index import TRAIN_KINDS, list_runs
    with ctx.Session() as s:
        runs = list_runs(s, TRAIN_KINDS)
    out = []
    for r in runs:
        found = jobs.resumable(r["dir"]) if r["dir"] else None
        if found:
            out.append((r["id"], r["dir"], found[0]))
    return out


def button_label(run_id: str | None, step: int | None) -> str:
    return f"Resume {run_id} from checkpoint step {step}" if run_id else "Resume"


@dataclass
class ResumeUI:
    run: gr.Dropdown
    button: gr.Button
    msg: gr.HTML

    @property
    def outputs(self) -> list:
        return [self.run, self.button]


def build_resume() -> ResumeUI:
    gr.Markdown("### Resume a stopped run")
    with gr.Row():
        run = gr.Dropdown(label="Stopped run (latest checkpoint)", choices=[], elem_id="train-resume-run", scale=3)
        button = gr.Button("Resume", elem_id="train-resume", interactive=False, scale=2)
    msg = gr.HTML(elem_id="train-resume-msg")
    return ResumeUI(run, button, msg)


def wire_resume(ui: ResumeUI, ctx: WebContext, loaded: gr.events.Dependency) -> None:
    def fill(request: gr.Request):
        with guard(ctx, request, PAGE):
            runs = stopped_runs(ctx)
            first = runs[0] if runs else (None, None, None)
            return [gr.update(choices=[(f"{r} · step {st}", r) for r, _, st in runs], value=first[0]),
                    gr.update(value=button_label(first[0], first[2]), interactive=bool(runs))]

    def pick(run_id, request: gr.Request):
        with guard(ctx, request, PAGE):
            step = next((st for r, _, st in stopped_runs(ctx) if r == run_id), None)
            return gr.update(value=button_label(run_id if step is not None else None, step),
                             interactive=step is not None)

    def resume(run_id, request: gr.Request):
        with guard(ctx, request, PAGE):
            found = next(((d, st) for r, d, st in stopped_runs(ctx) if r == run_id), None)
            if found is None:
                return [msg_html(f"{run_id or 'no run'}: not a stopped run with a checkpoint", "warn"), *fill(request)]
            job = jobs.resume(ctx.data_dir, found[0], user=request.username)
            return [msg_html(f"resuming {esc(run_id)} from checkpoint step {found[1]} (pid {job['pid']})"),
                    gr.update(), gr.update(interactive=False)]

    loaded.then(fill, None, ui.outputs, show_progress="hidden")
    ui.run.input(pick, [ui.run], [ui.button])
    ui.button.click(resume, [ui.run], [ui.msg, *ui.outputs], api_name="train_resume")

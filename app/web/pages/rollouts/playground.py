"""The playground on Rollouts: ask the left model version about the chosen puzzle with settings of
your own (G answers, temperature, max new tokens) and see each answer's reasoning, chosen frames and
score. Loading a model takes seconds, so it runs as a background job like the eval job
(`mvp rollout --run RUN --checkpoint C --puzzles ONE.jsonl --no-db`, app/web/jobs.py kind
"playground"): nothing is stored in the database; the answers are read from the job's Parquet file."""
from __future__ import annotations

import json
import time
from dataclasses import dataclass
from pathlib import Path

import gradio as gr
from sqlalchemy import select

from app.web import jobs
from app.web.common import WebContext, esc, form_number, guard, msg_html, whole_number
from db.runs import rollout_views as rd
from mvp_core.errors import UserError

PAGE = "rollouts"
KIND = "playground"
MAX_TEMPERATURE = 2.0


def settings(g, temperature, max_tokens) -> tuple[int, float, int]:
    """The form's numbers, validated: whole G and max tokens in their job ranges, temperature in (0, 2]."""
    g = int(form_number("G", g, whole=True))
    max_tokens = int(form_number("max new tokens", max_tokens, whole=True))
    temperature = float(form_number("temperature", temperature))
    for name, v, lo, hi in (("G", g, 1, jobs.MAX_G), ("max new tokens", max_tokens, 1, jobs.MAX_NEW_TOKENS)):
        if not lo <= v <= hi:
            raise UserError(f"{name} must be in [{lo}, {hi}], got {v}")
    if not 0 < temperature <= MAX_TEMPERATURE:
        raise UserError(f"temperature must be in (0, {MAX_TEMPERATURE:g}], got {temperature:g}")
    return g, temperature, max_tokens


def answers_of(out: Path) -> list[dict]:
    """The job's answers in the Rollouts view's form, with the trainer's group advantage."""
    import pyarrow.parquet as pq

    from mvp_core.train.loss import group_advantage_list
    rows = sorted(pq.read_table(out).to_pylist(), key=lambda r: r["sample_index"])
    advs = group_advantage_list([r["total"] for r in rows])
    return [{"sample": r["sample_index"], "completion": r["completion"], "chosen": list(r["chosen_labels"] or []),
             "format": r["format"], "selection": r["selection"], "order": r["order"], "exact": r["exact"],
             "total": r["total"], "advantage": a, "advantage_computed": True, "advantage_rule": "group"}
            for r, a in zip(rows, advs)]


@dataclass
class PlaygroundUI:
    g: gr.Number
    temperature: gr.Number
    max_tokens: gr.Number
    run: gr.Button
    status: gr.HTML
    answers: gr.HTML
    msg: gr.HTML
    timer: gr.Timer


def build_playground() -> PlaygroundUI:
    with gr.Accordion("Playground: sample the left version on this puzzle", open=False, elem_id="ro-pg"):
        with gr.Row():
            # the ranges are checked by `settings` (one line naming the field), not by the widgets
            g = whole_number(4, f"G (answers, 1-{jobs.MAX_G})", elem_id="ro-pg-g")
            temperature = gr.Number(1.0, label=f"Temperature (0-{MAX_TEMPERATURE:g}]", elem_id="ro-pg-temp")
            max_tokens = whole_number(64, "Max new tokens", elem_id="ro-pg-max")
            run = gr.Button("Sample", variant="primary", elem_id="ro-pg-run")
        status = gr.HTML(elem_id="ro-pg-status")
        msg = gr.HTML(elem_id="ro-pg-msg")
        answers = gr.HTML(elem_id="ro-pg-answers")
        timer = gr.Timer(1.0, active=False)
    return PlaygroundUI(g, temperature, max_tokens, run, status, answers, msg, timer)


def wire_playground(ui: PlaygroundUI, ctx: WebContext, left: gr.Dropdown, puzzle: gr.Dropdown) -> None:
    def start(key, pid, g, temperature, max_tokens, request: gr.Request):
        with guard(ctx, request, PAGE):
            src = rd.parse_source(key)
            if src is None or not pid:
                raise UserError("choose a model version and a puzzle above first")
            g, temperature, max_tokens = settings(g, temperature, max_tokens)
            from db.models.runs import Checkpoint
            with ctx.Session() as s:
                rec = rd.record_seen(s, key, pid)
                step = s.scalar(select(Checkpoint.step).where(Checkpoint.id == src[1])) if src[1] is not None else None
                label = rd.source_label(s, key)
            if rec is None:
                raise UserError(f"puzzle {pid} is not in the store")
            stamp = time.strftime("%Y%m%d-%H%M%S")
            d = jobs.jobs_dir(ctx.data_dir, KIND)
            puzzles, out = d / f"{stamp}-puzzle.jsonl", d / f"{stamp}-answers.parquet"
            puzzles.write_text(json.dumps(rec) + "\n", encoding="utf-8")
            jobs.launch_cli(ctx.data_dir, KIND, [
                "rollout", "--run", src[0], "--checkpoint", "base" if step is None else str(step),
                "--puzzles", str(puzzles), "--data", str(ctx.data_dir), "--no-db", "--out", str(out),
                "-G", str(g), "--temperature", repr(temperature), "--max-new-tokens", str(max_tokens),
                "--threads", "1"], user=request.username, label=f"{label} · {pid}",
                meta={"out": str(out), "puzzle": pid, "source": key})
            return [msg_html(""), f'<p class="mvp-muted">sampling {g} answers of {esc(label)} on {esc(pid)}…</p>',
                    gr.update(value=""), gr.Timer(active=True)]

    def tick(request: gr.Request):
        with guard(ctx, request, PAGE):
            job = jobs.active(ctx.data_dir, KIND)
            if not job:
                return [gr.skip(), gr.skip(), gr.Timer(active=False)]
            if job["alive"]:
                return [gr.skip(), gr.skip(), gr.skip()]
            out = Path(job.get("out", ""))
            if not out.is_file():
                tail = jobs.log_tail(job["log"], 3).strip().splitlines()
                return [f'<p class="mvp-muted" data-done="0">no answers: {esc(tail[-1] if tail else "the job ended")}</p>',
                        "", gr.Timer(active=False)]
            from app.web.pages.rollouts.view import group_html
            with ctx.Session() as s:
                rec = rd.record_seen(s, job["source"], job["puzzle"])
            answers = answers_of(out)
            return [f'<p class="mvp-muted" data-done="1">{len(answers)} answers · {esc(job["label"])}</p>',
                    group_html(rec, answers, f'{job["puzzle"]} · playground'), gr.Timer(active=False)]

    ui.run.click(start, [left, puzzle, ui.g, ui.temperature, ui.max_tokens],
                 [ui.msg, ui.status, ui.answers, ui.timer], api_name="playground")
    ui.timer.tick(tick, None, [ui.status, ui.answers, ui.timer], show_progress="hidden")

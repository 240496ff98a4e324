"""The Rollouts page's "Evaluate a checkpoint" panel: launch `mvp rollout` (G sampled answers per
puzzle, shown side by side above) or `mvp eval` (one greedy answer per puzzle, the report with the
shortcut baselines, shown below and on the Stats page) of any run's checkpoint on a set split, as a
background job of the web app's job system (app/web/jobs.py: one job of each kind at a time,
progress from its log, stop by the launcher or an admin, re-attached after a reload or a restart).
The Job choice is kept in the page's address (?job=eval), so a reload keeps it; a split the chosen
run trained on is marked in the Split picker and launches only with "score a trained split" ticked
(a trained split scores memory, not learning; `mvp eval` refuses it otherwise)."""
from __future__ import annotations

from dataclasses import dataclass

import gradio as gr

from app.web import jobs
from app.web.common import WebContext, esc, form_number, guard, msg_html, whole_number
from db.runs.names import trainer_name
from mvp_core.errors import UserError

PAGE = "rollouts"
KINDS = ("rollout", "eval")


@dataclass
class EvalPanel:
    load_outputs: list
    load: object
    tick_inputs: list
    tick_outputs: list
    tick: object
    timer: gr.Timer          # ticks only while a job of this panel runs (idle pages send nothing)


def jobs_html(data_dir) -> str:
    """Both kinds' current (or last) job: state, progress bar, who launched it."""
    cells = []
    for kind in KINDS:
        job = jobs.active(data_dir, kind)
        if not job:
            cells.append(f'<div class="mvp-job" data-kind="{kind}" data-state="none">{kind}: none launched yet</div>')
            continue
        state = job["status"]["state"]
        p = job["progress"]
        pct = 100.0 * p["done"] / p["total"] if p["total"] else 0.0
        if state == "done":
            pct = 100.0
        cells.append(f'<div class="mvp-job" data-kind="{kind}" data-state="{esc(state)}" data-done="{p["done"]}" '
                     f'data-total="{p["total"]}" data-started="{job["started"]}"><b>{kind}</b> · {esc(state)} · '
                     f'{esc(job["label"])} · {p["done"]}/{p["total"] or "?"} puzzles · by {esc(job["user"])}'
                     f'<div class="mvp-bar"><div style="width:{pct:.0f}%"></div></div></div>')
    return f'<div id="ro-jobs" class="mvp-progress">{"".join(cells)}</div>'


def jobs_log(data_dir, kind: str) -> str:
    job = jobs.active(data_dir, kind)
    text = jobs.log_tail(job["log"], 12) if job else ""
    return f'<div class="mvp-log" id="ro-job-log">{log_html(text)}</div>'


def log_html(text: str) -> str:
    """A job's log: its lines as they are, and the Markdown tables `mvp eval` prints as tables (read
    as raw pipes and dashes otherwise). Raw HTML in the log stays text (markdown-it's js-default preset)."""
    from markdown_it import MarkdownIt
    md = MarkdownIt("js-default")
    out, block = [], []

    def flush_text():
        if block:
            out.append(f"<pre>{esc(chr(10).join(block))}</pre>")
            block.clear()
    lines, i = text.splitlines(), 0
    while i < len(lines):
        if lines[i].lstrip().startswith("|"):
            j = i
            while j < len(lines) and lines[j].lstrip().startswith("|"):
                j += 1
            flush_text()
            out.append(md.render("\n".join(lines[i:j])))
            i = j
        else:
            block.append(lines[i])
            i += 1
    flush_text()
    return "".join(out)


@dataclass
class EvalControls:
    """The panel's components."""
    kind: gr.Radio
    run: gr.Dropdown
    ckpt: gr.Dropdown
    set_dd: gr.Dropdown
    split: gr.Dropdown
    allow: gr.Checkbox
    g: gr.Number
    mnt: gr.Number
    limit: gr.Number
    launch: gr.Button
    stop: gr.Button
    msg: gr.HTML
    status: gr.HTML
    log: gr.HTML
    timer: gr.Timer


def _layout() -> EvalControls:
    with gr.Accordion("Evaluate a checkpoint (background job)", open=True, elem_id="ro-eval-panel"):
        with gr.Row():
            kind = gr.Radio(label="Job", choices=[("rollout: G sampled answers", "rollout"),
                                                  ("eval: greedy answer + baselines", "eval")],
                            value="rollout", elem_id="ro-job-kind")
            run = gr.Dropdown(label="Run", choices=[], elem_id="ro-job-run")
            ckpt = gr.Dropdown(label="Checkpoint", choices=[], elem_id="ro-job-ckpt")
            set_dd = gr.Dropdown(label="Curated set", choices=[], elem_id="ro-job-set")
            split = gr.Dropdown(label="Split", choices=[], elem_id="ro-job-split")
            allow = gr.Checkbox(label="score a split the run trained on (memory, not learning)", value=False,
                                elem_id="ro-job-allow")
        with gr.Row():
            g = whole_number(8, "G (rollout)", elem_id="ro-job-G")
            mnt = whole_number(24, "max new tokens", elem_id="ro-job-mnt")
            limit = whole_number(0, "at most N puzzles (0 = all)", elem_id="ro-job-limit")
            launch = gr.Button("Launch", variant="primary", elem_id="ro-job-launch")
            stop = gr.Button("Stop", variant="stop", elem_id="ro-job-stop")
        msg = gr.HTML(elem_id="ro-job-msg")
        status = gr.HTML(elem_id="ro-job-status")
        log = gr.HTML(elem_id="ro-job-log-box")
    timer = gr.Timer(1.0, active=False)
    return EvalControls(kind, run, ckpt, set_dd, split, allow, g, mnt, limit, launch, stop, msg, status, log, timer)


@dataclass
class EvalHandlers:
    """The panel's event handlers; each checks the caller's role first (`guard`)."""
    ctx: WebContext
    db_url: str

    def ticking(self) -> gr.Timer:
        alive = any((j := jobs.active(self.ctx.data_dir, k)) is not None and j["alive"] for k in KINDS)
        return gr.Timer(active=alive)

    def load(self, request: gr.Request):
        """[kind, run, checkpoint, max new tokens, set, split, status, timer]: the Job named in the address
        (?job=), runs with a model (the first chosen, its checkpoints and completion length), the newest
        set and its split, the jobs. The pickers below the run and the set are filled here, not by their
        own events: a value set by an answer fires no `.input`, so the page's load is one answer
        (docs/web.md, "Pickers a load fills")."""
        with guard(self.ctx, request, PAGE):
            from db.runs.index import list_runs, sync_runs
            from db.sets.curated import list_sets
            sync_runs(self.ctx.Session, self.ctx.data_dir)
            with self.ctx.Session() as s:
                runs = [r for r in list_runs(s) if r["model_path"]]
                sets = [x["name"] for x in list_sets(s)]
                run_id = runs[0]["id"] if runs else None
                set_name = sets[-1] if sets else None
                ckpt, mnt = _checkpoints(s, run_id)
                split = _splits(s, run_id, set_name)
            choices = [(f"{r['id']} · {trainer_name(r['kind'])} · {r['n_checkpoints']} checkpoints", r["id"])
                       for r in runs]
            kind = request.query_params.get("job") if request is not None else None
            return [gr.update(value=kind) if kind in KINDS else gr.skip(),
                    gr.update(choices=choices, value=run_id), ckpt, mnt,
                    gr.update(choices=sets, value=set_name), split, jobs_html(self.ctx.data_dir), self.ticking()]

    def on_run(self, run_id, set_name, request: gr.Request):
        """[checkpoint, max new tokens, split] of a picked run: its checkpoints (newest chosen), its
        completion length, the set's splits with the ones it trained on marked."""
        with guard(self.ctx, request, PAGE):
            with self.ctx.Session() as s:
                return [*_checkpoints(s, run_id), _splits(s, run_id, set_name)]

    def on_set(self, run_id, set_name, request: gr.Request):
        """The picked set's splits, each the run trained on marked; a held-out one chosen (test, else val)."""
        with guard(self.ctx, request, PAGE):
            with self.ctx.Session() as s:
                return _splits(s, run_id, set_name)

    def on_launch(self, k, run_id, ck, set_name, sp, allow, g_v, mnt_v, lim, request: gr.Request):
        with guard(self.ctx, request, PAGE):
            g_v, mnt_v = form_number("G", g_v, True, 8), form_number("max new tokens", mnt_v, True, 24)
            lim = form_number("at most N puzzles", lim, True, 0)
            with self.ctx.Session() as s:
                trained = trained_splits(s, run_id, set_name)      # as `mvp eval` reads it, base included
            if sp and sp in trained and not allow:
                raise UserError(f"run {run_id} trained on split {sp} of set {set_name}: scoring it there measures "
                                f"memory, not learning (choose another split, or tick \"score a split the run "
                                f"trained on\")")
            job = jobs.launch_eval(self.ctx.data_dir, self.db_url, kind=k, run_id=run_id or "",
                                   checkpoint=ck or "", set_name=set_name or "", split=sp or "",
                                   user=request.username, num_generations=g_v, max_new_tokens=mnt_v, limit=lim or None,
                                   allow_trained_split=bool(allow and sp in trained))
            return (msg_html(f"launched {k} of {job['label']} (pid {job['pid']})"), jobs_html(self.ctx.data_dir),
                    gr.Timer(active=True))

    def on_stop(self, k, request: gr.Request):
        with guard(self.ctx, request, PAGE):
            text = jobs.stop(self.ctx.data_dir, kind=k, user=request.username,
                             role=self.ctx.auth.role_of(request.username))
            return msg_html(text), jobs_html(self.ctx.data_dir)

    def tick(self, k, request: gr.Request):
        with guard(self.ctx, request, PAGE):
            return jobs_html(self.ctx.data_dir), jobs_log(self.ctx.data_dir, k or "rollout"), self.ticking()


def _checkpoints(s, run_id: str | None) -> tuple:
    """(the Checkpoint picker's update: the run's checkpoints, the newest chosen; the max new tokens: the
    run's completion length, else left as it is)."""
    from db.models.runs import Run
    from db.runs.index import checkpoint_choices
    if not run_id:
        return gr.update(choices=[], value=None), gr.skip()
    cks = checkpoint_choices(s, run_id)
    run = s.get(Run, run_id)
    mlen = (run.config or {}).get("max_completion_length") if run else None
    return (gr.update(choices=cks, value=cks[-1][1] if cks else None),
            gr.update(value=int(mlen)) if mlen else gr.skip())


def _splits(s, run_id: str | None, set_name: str | None):
    """The Split picker's update: the set's splits, each the run trained on marked; a held-out one
    chosen (test, else val), else the whole set."""
    from db.runs.rollout_views import set_splits
    if not set_name:
        return gr.update(choices=[], value=None)
    splits = set_splits(s, set_name)
    trained = trained_splits(s, run_id, set_name)
    choices = [("whole set (the trained split left out)" if trained else "whole set", "")] + [
        (f"{x} · trained on: scores memory" if x in trained else x, x) for x in splits]
    held = [x for x in ("test", "val") if x in splits and x not in trained]
    return gr.update(choices=choices, value=held[0] if held else "")


def trained_splits(s, run_id: str | None, set_name: str | None) -> list[str]:
    """The splits of `set_name` the run trained on (its recorded set_splits; none for another set)."""
    from db.models.runs import Run
    run = s.get(Run, run_id) if run_id else None
    cfg = (run.config or {}) if run is not None else {}
    if not set_name or (cfg.get("set_name") or (run.set_name if run else None)) != set_name:
        return []
    return [str(x) for x in cfg.get("set_splits") or []]


# the Job choice into the page's address, so that a reload (load's ?job=) keeps it
KEEP_KIND_JS = ("(k) => { const u = new URL(window.location.href); u.searchParams.set('job', k); "
                "window.history.replaceState(null, '', u); }")


def build_eval_panel(ctx: WebContext, db_url: str) -> EvalPanel:
    """The panel's layout and events; the page wires `load` and `tick` (EvalPanel)."""
    c, h = _layout(), EvalHandlers(ctx, db_url)
    # `.input`: a person's pick; the page's load fills these pickers in its own answer (EvalHandlers.load)
    c.run.input(h.on_run, [c.run, c.set_dd], [c.ckpt, c.mnt, c.split])
    c.set_dd.input(h.on_set, [c.run, c.set_dd], [c.split])
    c.kind.input(None, [c.kind], None, js=KEEP_KIND_JS)
    c.launch.click(h.on_launch, [c.kind, c.run, c.ckpt, c.set_dd, c.split, c.allow, c.g, c.mnt, c.limit],
                   [c.msg, c.status, c.timer], api_name="eval_launch")
    c.stop.click(h.on_stop, [c.kind], [c.msg, c.status], api_name="eval_stop")
    return EvalPanel(load_outputs=[c.kind, c.run, c.ckpt, c.mnt, c.set_dd, c.split, c.status, c.timer], load=h.load,
                     tick_inputs=[c.kind],
                     tick_outputs=[c.status, c.log, c.timer], tick=h.tick, timer=c.timer)

"""The training page (researchers and admins): SFT or GRPO (GRPO may start from an SFT checkpoint)
on a curated set, a model picked from the local models the studio knows (checked before launch:
a wrong path is one clear line and leaves no run folder), the reward function a visible choice
(default: the real MVP reward, from configs/web.yaml), the splits it trains on and is evaluated on
(app/web/pages/train/splits.py), the main settings over a YAML config shown in full; then live
charts of reward (and each term, and held-out eval reward when the trainer logs it), KL and step
time, drawn in the same tab on a 1 s timer, with a warning when the run has no learning signal
(app/web/pages/train/signals.py); the log follows its end; stop.

Runs outlive the page and the server: the page re-attaches to whatever DATA/train/active.json
names (app/web/jobs.py) and shows that run's settings in the form. Past runs, their curves
overlaid, and each run's sampled completions are in app/web/pages/train/runs.py below the form."""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import gradio as gr

from app.web import jobs as train_jobs
from app.web.common import (WebContext, esc, filled, form_number, guard, msg_html, nav_html, on_latest,
                            page_blocks, sections_in_one, whole_number)
from app.web.pages.train import signals, splits as split_ui
from app.web.svg_chart import line_chart
from mvp_core.errors import UserError

PAGE = "train"
REFRESH_S = 1.0
TERMS = ("format", "selection", "order", "exact")
EVAL_KEYS = ("eval_reward", "eval_exact", "eval_format")
FORM_KEYS = ("reward", "max_steps", "save_steps", "num_generations", "learning_rate", "loss_type", "beta",
             "max_completion_length")


def default_yaml() -> str:
    """configs/web.yaml resolved, every key with its documentation (the form overrides the top keys)."""
    from mvp_core.train.config import documented_yaml, load_config
    return documented_yaml(load_config(train_jobs.DEFAULT_CONFIG))


def sft_yaml() -> str:
    """configs/web-sft.yaml resolved, every SFT key with its description."""
    import yaml

    from mvp_core.train.sft_config import SFTConfig, load_sft_config
    cfg = load_sft_config(train_jobs.SFT_CONFIG)
    lines = []
    for name, f in SFTConfig.model_fields.items():
        lines.append(f"# {f.description}")
        lines.append(f"{name}: {yaml.safe_dump(getattr(cfg, name), default_flow_style=True).strip().removesuffix('...').strip()}")
    return "\n".join(lines) + "\n"


def defaults(trainer: str = "grpo") -> dict:
    """The form's values: configs/web.yaml (GRPO) or configs/web-sft.yaml (SFT: no GRPO-only keys)."""
    if trainer == "sft":
        from mvp_core.train.sft_config import load_sft_config
        cfg = load_sft_config(train_jobs.SFT_CONFIG)
        return {k: getattr(cfg, k, None) for k in FORM_KEYS}
    from mvp_core.train.config import load_config
    cfg = load_config(train_jobs.DEFAULT_CONFIG)
    return {k: getattr(cfg, k) for k in FORM_KEYS}


GRPO_ONLY = ("reward", "num_generations", "loss_type", "beta")


def set_choices(ctx: WebContext) -> list[str]:
    from db.sets.curated import list_sets
    with ctx.Session() as s:
        return [x["name"] for x in list_sets(s)]


def model_choices(ctx: WebContext) -> list[tuple[str, str]]:
    from app.web.models_known import known_models
    return known_models(ctx.Session, ctx.data_dir)


def job_settings(job: dict | None) -> dict | None:
    """The launched run's settings (launch.yaml), to put back into the form after a reload."""
    if not job:
        return None
    from mvp_core.config import load_yaml_mapping
    try:
        cfg = load_yaml_mapping(Path(job["run_dir"]) / "launch.yaml")
    except UserError:
        return None
    return {**{k: cfg.get(k) for k in FORM_KEYS}, "model": cfg.get("model"), "set": job.get("set"),
            "trainer": job.get("trainer", "grpo"), "train_splits": cfg.get("set_splits"),
            "eval_split": cfg.get("eval_split") if cfg.get("eval_puzzles") else ""}


def charts(rows: list[dict]) -> tuple[str, str, str]:
    """(reward and its terms or SFT token accuracy, + held-out eval dashed; loss and KL; step time)."""
    def pts(key):
        return [(r["step"], r[key]) for r in rows if r.get(key) is not None]
    series = {"reward": pts("reward"), **{t: pts(f"reward/{t}") for t in TERMS},
              "token accuracy": pts("token_accuracy")}
    series.update({f"held-out {k.removeprefix('eval_')}": pts(k) for k in EVAL_KEYS})
    series = {k: v for k, v in series.items() if v}
    reward = line_chart(series, title="Reward and its terms / SFT token accuracy (dashed: held-out eval)",
                        elem_id="train-reward-chart", y_range=(0, 1),
                        dashed=tuple(k for k in series if k.startswith("held-out")))
    loss = line_chart({k: v for k, v in {"loss": pts("loss"), "kl": pts("kl")}.items() if v},
                      title="Loss and KL to the reference", elem_id="train-kl-chart")
    step = line_chart({"step s": pts("step_s")}, title="Step time (s)", elem_id="train-time-chart")
    return reward, loss, step


def status_html(job: dict | None, rows: list[dict]) -> str:
    if not job:
        return '<div id="train-state" data-state="none">No run launched yet.</div>'
    st = job.get("status") or {}
    state = "running" if job["alive"] else (st.get("state") or "ended")
    if not job["alive"] and state == "running":
        state = "died"            # the process is gone without writing an end state
    step = rows[-1]["step"] if rows else 0
    last = rows[-1] if rows else {}
    reward = f" · reward {last['reward']:.3f}" if "reward" in last else ""
    return (f'<div id="train-state" data-state="{esc(state)}" data-step="{step}" data-pid="{job["pid"]}" '
            f'data-pgid="{job["pgid"]}" data-run="{esc(job["run_dir"])}">'
            f'<b>{esc(state)}</b> · {esc(job.get("trainer", "grpo")).upper()} · {esc(Path(job["run_dir"]).name)} · '
            f'set {esc(job.get("set") or "?")} · step {step}/{esc(st.get("max_steps", "?"))}{reward} · pid {job["pid"]} · '
            f'by {esc(job["user"])}</div>')


def metrics_table(rows: list[dict]) -> str:
    cols = [c for c in ("step", "reward", "reward_std", "reward/exact", "loss", "token_accuracy", "kl",
                        "completion_length", "grad_norm", "step_s", "eval_reward", "eval_exact")
            if any(c in r for r in rows)] or ["step"]
    head = "".join(f"<th>{esc(c)}</th>" for c in cols)
    cell = lambda v: f"<td>{v:.4g}</td>" if isinstance(v, float) else f"<td>{esc('' if v is None else v)}</td>"
    body = "".join("<tr>" + "".join(cell(r.get(c)) for c in cols) + "</tr>" for r in rows[-8:])
    return f'<table id="train-metrics-table" class="mvp-table"><tr>{head}</tr>{body}</table>'


def log_html(text: str) -> str:
    # column-reverse keeps the box scrolled to its end as lines arrive (no script needed)
    return f'<div class="mvp-log" id="train-log-box"><pre id="train-log">{esc(text)}</pre></div>'


def snapshot(ctx: WebContext) -> list:
    from mvp_core.train.rundir import read_metrics
    job = train_jobs.active(ctx.data_dir)
    rows = read_metrics(job["run_dir"]) if job else []
    tail = train_jobs.log_tail(job["run_dir"]) if job else ""
    # the no-signal warnings sit with the status line, where a user watching the run looks
    return [status_html(job, rows) + signals.warnings_html(rows), *charts(rows), metrics_table(rows), log_html(tail)]


INT_KEYS = ("max_steps", "save_steps", "num_generations", "max_completion_length")
FLOAT_KEYS = ("learning_rate", "beta")


def launch_overrides(trainer: str, values: dict) -> list[str]:
    """The form's settings as key=value overrides of the YAML (GRPO-only keys left out for SFT)."""
    keys = [k for k in FORM_KEYS if trainer == "grpo" or k not in GRPO_ONLY]
    out = []
    for k in keys:
        v = values.get(k)
        out.append(f"{k}={form_number(k, v, whole=k in INT_KEYS) if k in INT_KEYS + FLOAT_KEYS else (v or '')}")
    return out


@dataclass
class TrainForm:
    """The page's components: the form (in FORM order), the full config and the live outputs."""
    fields: dict
    config: gr.Code
    launch: gr.Button
    stop: gr.Button
    msg: gr.HTML
    live: list
    timer: gr.Timer
    splits: split_ui.SplitControls

    @property
    def form(self) -> list:
        return [self.fields[k] for k in ("trainer", "set", "model", *FORM_KEYS)]


def _source_row() -> dict:
    """Trainer, curated set and model."""
    with gr.Row():
        trainer = gr.Radio(label="Trainer", choices=[("GRPO", "grpo"), ("SFT", "sft")],
                           value="grpo", elem_id="train-trainer", scale=1, interactive=False)
        set_dd = gr.Dropdown(label="Curated set", choices=[], elem_id="train-set", scale=2, interactive=False)
        model = gr.Dropdown(label="Model (local models and trained checkpoints; or type a path)", choices=[],
                            allow_custom_value=True, elem_id="train-model", scale=4, interactive=False)
    return {"trainer": trainer, "set": set_dd, "model": model}


def _settings_row(d: dict) -> dict:
    """The main settings (FORM_KEYS). Numbers are checked by the handler, not rounded by Gradio: a
    NaN sent to an integer field would fail inside Gradio with a raw message."""
    from mvp_core.train.config import LOSS_TYPES, REWARDS

    def num(key, label, elem):
        if key in INT_KEYS:
            return whole_number(d[key], label, elem_id=elem, interactive=False)
        return gr.Number(label=label, value=d[key], elem_id=elem, interactive=False)
    with gr.Row():
        out = {"reward": gr.Dropdown(label="Reward function", choices=list(REWARDS), value=d["reward"],
                                     elem_id="train-reward", interactive=False,
                                     info="mvp: the fine-grained MVP reward; format / mentions_label: smoke tests only"),
               "max_steps": num("max_steps", "max_steps", "train-max-steps"),
               "save_steps": num("save_steps", "save_steps (checkpoint every)", "train-save-steps"),
               "num_generations": num("num_generations", "num_generations (G)", "train-G"),
               "learning_rate": num("learning_rate", "learning_rate", "train-lr"),
               "loss_type": gr.Dropdown(label="loss_type", choices=list(LOSS_TYPES), value=d["loss_type"],
                                        elem_id="train-loss-type", interactive=False),
               "beta": num("beta", "beta (KL)", "train-beta"),
               "max_completion_length": num("max_completion_length", "max_completion_length", "train-max-len")}
    return out


def _live_outputs() -> list:
    """Status line, the three charts, the metrics table and the log."""
    status = gr.HTML(elem_id="train-status")
    with gr.Row():
        charts_ = [gr.HTML(elem_id="train-reward-plot"), gr.HTML(elem_id="train-kl-plot"),
                   gr.HTML(elem_id="train-time-plot")]
    return [status, *charts_, gr.HTML(elem_id="train-metrics"), gr.HTML(elem_id="train-log-html")]


def build_form() -> TrainForm:
    gr.Markdown("## Training\nThe form's settings override the YAML below; the run is `mvp train` (GRPO) or "
                "`mvp sft` in its own process, writing a run directory under DATA/runs/.")
    fields = _source_row()
    split_controls = split_ui.build()
    fields.update(_settings_row(defaults()))
    with gr.Accordion("Full config (YAML, every key documented)", open=False):
        config = gr.Code(value=default_yaml(), language="yaml", interactive=False, elem_id="train-config")
    with gr.Row():
        launch_btn = gr.Button("Launch", variant="primary", elem_id="train-launch", interactive=False)
        stop_btn = gr.Button("Stop", variant="stop", elem_id="train-stop")
    msg = gr.HTML(elem_id="train-msg")
    return TrainForm(fields, config, launch_btn, stop_btn, msg, _live_outputs(), gr.Timer(REFRESH_S), split_controls)


@dataclass
class TrainHandlers:
    """The page's event handlers; each checks the caller's role first (`guard`)."""
    ctx: WebContext

    def load(self, request: gr.Request):
        """The form (the active run's settings, else the defaults), the full config and the live view.
        The form and Launch are read-only until this returns (common.filled says why)."""
        with guard(self.ctx, request, PAGE):
            from db.runs.index import sync_runs
            sync_runs(self.ctx.Session, self.ctx.data_dir)
            sets, models = set_choices(self.ctx), model_choices(self.ctx)
            cur = job_settings(train_jobs.active(self.ctx.data_dir)) or {}
            pick = lambda k, dflt: cur.get(k) if cur.get(k) is not None else dflt
            tr = pick("trainer", "grpo")
            dd = defaults(tr)
            set_name = pick("set", sets[-1] if sets else None)
            vals = [filled(value=tr), filled(choices=sets, value=set_name),
                    filled(choices=models, value=pick("model", models[0][1] if models else None)),
                    *[filled(value=pick(k, dd[k]), visible=tr != "sft" or k not in GRPO_ONLY) for k in FORM_KEYS]]
            sp = split_ui.for_set(split_ui.split_counts(self.ctx, set_name), cur.get("train_splits"),
                                  cur.get("eval_split"), bool(cur.get("eval_split")) and
                                  cur.get("eval_split") in (cur.get("train_splits") or []))
            return [*vals, filled(value=default_yaml() if tr != "sft" else sft_yaml()), filled(),
                    *snapshot(self.ctx), *sp]

    def refresh(self, request: gr.Request):
        with guard(self.ctx, request, PAGE):
            return snapshot(self.ctx)

    def on_set(self, set_name, request: gr.Request):
        """A new set: its splits, train only and the default eval split chosen."""
        with guard(self.ctx, request, PAGE):
            return split_ui.for_set(split_ui.split_counts(self.ctx, set_name))

    def on_splits(self, set_name, train, evaluate, request: gr.Request):
        with guard(self.ctx, request, PAGE):
            return split_ui.note_html(split_ui.split_counts(self.ctx, set_name), list(train or []), evaluate or "")

    def launch(self, tr, set_name, model_path, reward, max_steps, save_steps, num_generations, learning_rate,
               loss_type, beta, max_completion_length, yaml_text, train_splits, eval_split, allow_overlap,
               request: gr.Request):
        with guard(self.ctx, request, PAGE):
            tr = tr or "grpo"
            overrides = launch_overrides(tr, dict(zip(FORM_KEYS, (
                reward, max_steps, save_steps, num_generations, learning_rate, loss_type, beta,
                max_completion_length))))
            counts = split_ui.split_counts(self.ctx, set_name)
            train_splits, eval_split = list(train_splits or []), eval_split or ""
            split_ui.check(list(counts), train_splits, eval_split, bool(allow_overlap))
            if counts:
                overrides += split_ui.eval_overrides(self.ctx.Session, self.ctx.data_dir, set_name, eval_split)
            job = train_jobs.launch(self.ctx.data_dir, self.ctx.Session, set_name=set_name or "",
                                    model=(model_path or "").strip(), yaml_text=yaml_text or "",
                                    overrides=overrides, user=request.username, trainer=tr,
                                    train_splits=tuple(train_splits) if counts else split_ui.TRAIN_DEFAULT)
            return [msg_html(f"launched {Path(job['run_dir']).name} (pid {job['pid']})"), *snapshot(self.ctx)]

    def stop(self, request: gr.Request):
        with guard(self.ctx, request, PAGE):
            text = train_jobs.stop(self.ctx.data_dir, user=request.username,
                                   role=self.ctx.auth.role_of(request.username))
            from db.runs.index import sync_runs
            sync_runs(self.ctx.Session, self.ctx.data_dir)
            return [msg_html(text), *snapshot(self.ctx)]

    def trainer(self, tr, request: gr.Request):
        """Switching SFT / GRPO: that trainer's config and defaults; GRPO-only fields hidden for SFT."""
        with guard(self.ctx, request, PAGE):
            dd, grpo = defaults(tr), tr != "sft"
            ups = [gr.update(value=dd[k], visible=grpo) if k in GRPO_ONLY else gr.update(value=dd[k])
                   for k in FORM_KEYS]
            return [*ups, default_yaml() if grpo else sft_yaml()]


def build(ctx: WebContext) -> gr.Blocks:
    """The page: the navigation bar, the form, the live charts and the past runs, with their events.

    What a user opens the page for (the navigation, the form and the past runs) arrives in one answer
    that skips Gradio's queue and shows no progress overlay, and the lower sections (explore, resume,
    compare) load after it, not beside it: on 2 cores, six loads side by side with a progress overlay
    on each of ~45 outputs kept Chromium busy for ~0.6 s after the data had arrived
    (docs/BENCHMARKS.md, "Pages"). The Rollouts page loads the same way."""
    from app.web.pages.train import compare as train_compare, explore as train_explore
    from app.web.pages.train import resume as train_resume, runs as train_runs
    with page_blocks("Train") as page:
        nav = gr.HTML()
        f = build_form()
        runs_ui = train_runs.build_runs_section(ctx)
        explore_ui = train_explore.build_explore()
        resume_ui = train_resume.build_resume()
        compare_ui = train_compare.build_compare()
        h = TrainHandlers(ctx)
        sp = [*f.splits.inputs, f.splits.note]
        form_outputs = [*f.form, f.config, f.launch, *f.live, *sp]

        def nav_fn(request: gr.Request):
            return nav_html(ctx, request.username, PAGE)
        # the form's load has synced DATA/runs/ into the index; the runs section reads it as it is
        first_view = sections_in_one((nav_fn, [nav]), (h.load, form_outputs), (runs_ui.show, runs_ui.outputs))
        loaded = page.load(first_view, None, [nav, *form_outputs, *runs_ui.outputs],
                           queue=False, show_progress="hidden")
        train_explore.wire_explore(explore_ui, ctx, loaded)
        train_resume.wire_resume(resume_ui, ctx, loaded)
        train_compare.wire_compare(compare_ui, ctx, loaded)
        f.fields["trainer"].input(h.trainer, [f.fields["trainer"]], [*(f.fields[k] for k in FORM_KEYS), f.config])
        f.fields["set"].input(h.on_set, [f.fields["set"]], sp)
        on_latest([f.splits.train.input, f.splits.evaluate.input], h.on_splits,
                  [f.fields["set"], f.splits.train, f.splits.evaluate], [f.splits.note])
        f.timer.tick(h.refresh, None, f.live, show_progress="hidden")
        # the past-runs table follows a launch and a stop at once (it said "running" until a reload)
        f.launch.click(h.launch, [*f.form, f.config, *f.splits.inputs], [f.msg, *f.live], api_name="train_launch") \
            .then(runs_ui.load, None, runs_ui.outputs)
        f.stop.click(h.stop, None, [f.msg, *f.live], api_name="train_stop").then(runs_ui.show, None, runs_ui.outputs)
    return page

"""The training page (researchers and admins): choose a curated set, a model path and the main GRPO
settings on top of a YAML config shown in full, launch `mvp train` as its own process, watch
reward (and each term), KL, step time and the log tail refresh on a timer, stop the run.

The web app calls `build_train_page(ctx)` inside its Blocks for the /train mount (app/web/server.py).
Runs outlive the page and the server: the page re-attaches to whatever DATA/train/active.json
names (app/web/jobs.py)."""
from __future__ import annotations

from pathlib import Path

import gradio as gr
import pandas as pd

from app.web import jobs as train_jobs
from app.web.common import WebContext, esc, guard, msg_html

PAGE = "train"
REFRESH_S = 2.0
TERMS = ("format", "selection", "order", "exact")


def default_yaml() -> str:
    """configs/tiny.yaml resolved, every key with its documentation (the form overrides the top keys)."""
    from mvp_core.grpo.config import documented_yaml, load_config
    return documented_yaml(load_config(train_jobs.DEFAULT_CONFIG))


def set_choices(ctx: WebContext) -> list[str]:
    from db.sets import list_sets
    with ctx.Session() as s:
        return [x["name"] for x in list_sets(s)]


def default_model(ctx: WebContext) -> str:
    tiny = Path(ctx.data_dir) / "tiny-model"
    return str(tiny) if (tiny / "config.json").is_file() else ""


def metric_frames(run_dir: str | None):
    """(reward and terms, KL, step time) long-format DataFrames for the line plots, and the rows."""
    from mvp_core.grpo.rundir import read_metrics
    rows = read_metrics(run_dir) if run_dir else []
    reward = [{"step": r["step"], "value": r["reward"], "series": "reward"} for r in rows]
    for t in TERMS:
        reward += [{"step": r["step"], "value": r[f"reward/{t}"], "series": t} for r in rows]
    kl = [{"step": r["step"], "value": r["kl"], "series": "kl"} for r in rows]
    step = [{"step": r["step"], "value": r["step_s"], "series": "step s"} for r in rows]
    empty = pd.DataFrame({"step": [], "value": [], "series": []})
    return ((pd.DataFrame(reward) if reward else empty), (pd.DataFrame(kl) if kl else empty),
            (pd.DataFrame(step) if step else empty), rows)


def status_html(job: dict | None, rows: list[dict]) -> str:
    if not job:
        return '<div id="train-state" data-state="none">No run launched yet.</div>'
    st = job.get("status") or {}
    state = "running" if job["alive"] else (st.get("state") or "ended")
    if not job["alive"] and state == "running":
        state = "died"            # the process is gone without writing an end state
    step = rows[-1]["step"] if rows else 0
    last = rows[-1] if rows else {}
    reward = f" · reward {last['reward']:.3f}" if last else ""
    return (f'<div id="train-state" data-state="{esc(state)}" data-step="{step}" data-pid="{job["pid"]}" '
            f'data-pgid="{job["pgid"]}" data-run="{esc(job["run_dir"])}">'
            f'<b>{esc(state)}</b> · {esc(Path(job["run_dir"]).name)} · set {esc(job["set"])} · '
            f'step {step}/{esc(st.get("max_steps", "?"))}{reward} · pid {job["pid"]} · by {esc(job["user"])}</div>')


def metrics_table(rows: list[dict]) -> str:
    cols = ("step", "reward", "reward_std", "kl", "completion_length", "grad_norm", "step_s")
    head = "".join(f"<th>{c}</th>" for c in cols)
    body = "".join("<tr>" + "".join(f"<td>{r[c]:.4g}</td>" if isinstance(r[c], float) else f"<td>{r[c]}</td>"
                                    for c in cols) + "</tr>" for r in rows[-8:])
    return f'<table id="train-metrics-table" class="mvp-table"><tr>{head}</tr>{body}</table>'


def build_train_page(ctx: WebContext) -> None:
    """Add the page's components to the Blocks being built (app/web/server.py wraps it with the nav bar)."""
    gr.Markdown("## GRPO training\nSettings below override the YAML; the run is `mvp train` in its own process.")
    with gr.Row():
        set_dd = gr.Dropdown(label="Curated set", choices=[], elem_id="train-set", scale=2)
        model = gr.Textbox(label="Model path", elem_id="train-model", scale=3)
    with gr.Row():
        max_steps = gr.Number(label="max_steps", value=20, precision=0, elem_id="train-max-steps")
        num_gen = gr.Number(label="num_generations (G)", value=4, precision=0, elem_id="train-G")
        lr = gr.Number(label="learning_rate", value=1e-3, elem_id="train-lr")
        loss_type = gr.Dropdown(label="loss_type", choices=["dapo", "grpo", "dr_grpo", "bnpo"], value="dapo",
                                elem_id="train-loss-type")
        beta = gr.Number(label="beta (KL)", value=0.0, elem_id="train-beta")
        max_len = gr.Number(label="max_completion_length", value=24, precision=0, elem_id="train-max-len")
    with gr.Accordion("Full config (YAML, every key documented)", open=False):
        config = gr.Code(value=default_yaml(), language="yaml", interactive=True, elem_id="train-config")
    with gr.Row():
        launch_btn = gr.Button("Launch", variant="primary", elem_id="train-launch")
        stop_btn = gr.Button("Stop", variant="stop", elem_id="train-stop")
    msg = gr.HTML(elem_id="train-msg")
    status = gr.HTML(elem_id="train-status")
    with gr.Row():
        reward_plot = gr.LinePlot(x="step", y="value", color="series", title="Reward and its terms",
                                  elem_id="train-reward-plot", y_lim=[0, 1])
        kl_plot = gr.LinePlot(x="step", y="value", color="series", title="KL to the reference", elem_id="train-kl-plot")
        time_plot = gr.LinePlot(x="step", y="value", color="series", title="Step time (s)", elem_id="train-time-plot")
    table = gr.HTML(elem_id="train-metrics")
    log = gr.Textbox(label="Log (tail)", lines=14, max_lines=14, interactive=False, elem_id="train-log",
                     autoscroll=True)
    timer = gr.Timer(REFRESH_S)
    live = [status, reward_plot, kl_plot, time_plot, table, log]

    def snapshot():
        job = train_jobs.active(ctx.data_dir)
        rd, kd, td, rows = metric_frames(job["run_dir"] if job else None)
        tail = train_jobs.log_tail(job["run_dir"]) if job else ""
        return [status_html(job, rows), rd, kd, td, metrics_table(rows), tail]

    def on_load(request: gr.Request):
        with guard(ctx, request, PAGE):
            sets = set_choices(ctx)
            return [gr.update(choices=sets, value=sets[-1] if sets else None), default_model(ctx), *snapshot()]

    def refresh(request: gr.Request):
        with guard(ctx, request, PAGE):
            return snapshot()

    def on_launch(set_name, model_path, steps, g, lr_v, lt, beta_v, mlen, yaml_text, request: gr.Request):
        with guard(ctx, request, PAGE):
            overrides = [f"max_steps={int(steps)}", f"num_generations={int(g)}", f"learning_rate={lr_v}",
                         f"loss_type={lt}", f"beta={beta_v}", f"max_completion_length={int(mlen)}"]
            job = train_jobs.launch(ctx.data_dir, ctx.Session, set_name=set_name or "", model=(model_path or "").strip(),
                                    yaml_text=yaml_text, overrides=overrides, user=request.username)
            return [msg_html(f"launched {Path(job['run_dir']).name} (pid {job['pid']})"), *snapshot()]

    def on_stop(request: gr.Request):
        with guard(ctx, request, PAGE):
            return [msg_html(train_jobs.stop(ctx.data_dir)), *snapshot()]

    # The Blocks being built (the web app's, or `build` below): the page's own load event.
    page = gr.context.Context.root_block
    page.load(on_load, None, [set_dd, model, *live])
    timer.tick(refresh, None, live, show_progress="hidden")
    launch_btn.click(on_launch, [set_dd, model, max_steps, num_gen, lr, loss_type, beta, max_len, config],
                     [msg, *live], api_name="train_launch")
    stop_btn.click(on_stop, None, [msg, *live], api_name="train_stop")


# Standalone use (the web app normally wraps build_train_page with its navigation bar).
def build(ctx: WebContext) -> gr.Blocks:
    with gr.Blocks(title="MVP Studio · Train") as demo:
        build_train_page(ctx)
    return demo

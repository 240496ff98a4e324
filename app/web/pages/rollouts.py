"""The Rollouts page (researchers and admins): any two model versions (a run's base model or any
checkpoint, of one run or two) side by side on the same puzzle: the puzzle itself (context
filmstrip and gap, the options, the prompt), then each version's G answers with their reasoning,
the chosen frames shown in the gap, every reward term and the training advantage; how often each
distractor fooled the model; zero-variance groups flagged (one click sends the puzzle back to the
curation queue). Below: evaluate a checkpoint as a background job (app/web/pages/rollouts_eval.py)
and the stored evaluations per checkpoint beside the shortcut baselines (app/web/pages/stats_eval.py).

Every control answers with everything below it in one event (`.input`, not `.change`, so no
cascade of round trips): first paint is one request, switching puzzles one more."""
from __future__ import annotations

import gradio as gr

from app.web.common import WebContext, guard, msg_html, nav_html
from app.web.pages import rollouts_eval, rollouts_steer, stats_eval
from app.web.pages.rollouts_view import group_html, puzzle_html, run_html
from db import rollout_views as rd

PAGE = "rollouts"
NONE = ""


def _default_right(choices: list[tuple[str, str]], left: str | None) -> str:
    """Another version of the left's run (its newest checkpoint), else nothing."""
    src = rd.parse_source(left)
    same = [k for _, k in choices if src and k != left and rd.parse_source(k)[0] == src[0]]
    return same[-1] if same else NONE


def view(ctx: WebContext, left: str | None, right: str | None, pid: str | None) -> list:
    """[puzzle panel, left group, right group, run info] for one puzzle."""
    if not left or not pid:
        return ["", "", "", ""]
    with ctx.Session() as s:
        rec = rd.record_seen(s, left, pid)
        info = rd.run_info(s, rd.parse_source(left)[0])     # the run (its base model path)
        a = rd.group(s, left, pid)
        la = rd.source_label(s, left)
        if right:
            rec2 = rd.record_seen(s, right, pid)
            b, lb = rd.group(s, right, pid), rd.source_label(s, right)
    right_html = group_html(rec2, b, f"{pid} · {lb}") if right else ""
    return [puzzle_html(rec, info.get("config") or {}), group_html(rec, a, f"{pid} · {la}"), right_html,
            run_html(info)]


def puzzles_for(ctx: WebContext, left: str | None, vid: str | None):
    if not left or not vid:
        return gr.update(choices=[], value=None), None
    with ctx.Session() as s:
        ps = rd.puzzles(s, left, vid)
    first = ps[0].puzzle_id if ps else None
    return gr.update(choices=[(p.label, p.puzzle_id) for p in ps], value=first), first


def videos_for(ctx: WebContext, left: str | None):
    with ctx.Session() as s:
        vids = rd.videos(s, left) if left else []
    first = vids[0][1] if vids else None
    return gr.update(choices=vids, value=first), first


def _warm_training_code() -> None:
    """The advantage is the trainer's (mvp_core.grpo.loss, torch): import it in the background while
    the server starts, so the first puzzle shown does not wait for torch (seconds; minutes when the
    machine is loaded)."""
    import importlib
    import threading
    threading.Thread(target=importlib.import_module, args=("mvp_core.grpo.loss",), daemon=True).start()


def build(ctx: WebContext) -> gr.Blocks:
    _warm_training_code()
    db_url = ctx.Session.kw["bind"].url.render_as_string(hide_password=False)
    with gr.Blocks(title="MVP Studio · Rollouts") as demo:
        nav = gr.HTML()
        with gr.Row():
            ckpt = gr.Dropdown(label="Model version (left)", choices=[], elem_id="ro-ckpt", scale=3)
            ckpt2 = gr.Dropdown(label="Compare with (right)", choices=[], elem_id="ro-ckpt2", scale=3)
            video = gr.Dropdown(label="Video", choices=[], elem_id="ro-video", scale=2)
            refresh = gr.Button("Refresh", elem_id="ro-refresh", scale=0, size="sm")
        info = gr.HTML()
        puzzle = gr.Dropdown(label="Puzzle (G answers · mean · std)", choices=[], elem_id="ro-puzzle")
        with gr.Row():
            requeue = gr.Button("Send this puzzle back to the curation queue", elem_id="ro-requeue")
        msg = gr.HTML(elem_id="ro-msg")
        puzzle_view = gr.HTML(elem_id="ro-puzzle-box")
        with gr.Row(elem_classes=["mvp-side"]):
            left = gr.HTML(elem_id="ro-left")
            right = gr.HTML(elem_id="ro-right")
        # steered vs unsteered answer of the left version (docs/steer.md); `ckpt` is a source key,
        # which rollout_views.record_seen / run_info take like a run id
        rollouts_steer.build_panel(ctx, ckpt, puzzle)
        panel = rollouts_eval.build_eval_panel(ctx, db_url)
        eval_outputs, eval_fill = stats_eval.build_eval_section(ctx, PAGE)
        timer = gr.Timer(1.0)
        shown = [puzzle_view, left, right, info]

        def on_load(request: gr.Request):
            with guard(ctx, request, PAGE):
                with ctx.Session() as s:
                    choices = rd.sources(s)
                lft = choices[0][1] if choices else None
                rgt = _default_right(choices, lft)
                vids, vid = videos_for(ctx, lft)
                pzs, pid = puzzles_for(ctx, lft, vid)
                note = "" if choices else ("No answers stored yet: evaluate a checkpoint below, or run "
                                           "`mvp rollout --run RUN --checkpoint C --set NAME`.")
                return [nav_html(ctx, request.username, PAGE), gr.update(choices=choices, value=lft),
                        gr.update(choices=[("(none)", NONE)] + choices, value=rgt), vids, pzs,
                        msg_html(note, "warn"), *view(ctx, lft, rgt, pid)]
        load_outputs = [nav, ckpt, ckpt2, video, puzzle, msg, *shown]
        demo.load(on_load, None, load_outputs)
        refresh.click(on_load, None, load_outputs, api_name="refresh")
        demo.load(panel.load, None, panel.load_outputs)
        demo.load(eval_fill, None, eval_outputs)
        refresh.click(eval_fill, None, eval_outputs)
        timer.tick(panel.tick, panel.tick_inputs, panel.tick_outputs, show_progress="hidden")

        def on_left(lft, rgt, request: gr.Request):
            with guard(ctx, request, PAGE):
                vids, vid = videos_for(ctx, lft)
                pzs, pid = puzzles_for(ctx, lft, vid)
                return [vids, pzs, *view(ctx, lft, rgt, pid)]
        ckpt.input(on_left, [ckpt, ckpt2], [video, puzzle, *shown], api_name="run_videos")

        def on_video(lft, rgt, vid, request: gr.Request):
            with guard(ctx, request, PAGE):
                pzs, pid = puzzles_for(ctx, lft, vid)
                return [pzs, *view(ctx, lft, rgt, pid)]
        video.input(on_video, [ckpt, ckpt2, video], [puzzle, *shown], api_name="video_puzzles")

        def show(lft, rgt, pid, request: gr.Request):
            with guard(ctx, request, PAGE):
                return view(ctx, lft, rgt, pid)
        puzzle.input(show, [ckpt, ckpt2, puzzle], shown, api_name="group")
        ckpt2.input(show, [ckpt, ckpt2, puzzle], shown, api_name="group_compare")

        def on_requeue(pid, request: gr.Request):
            with guard(ctx, request, PAGE) as uid:
                if not pid:
                    return msg_html("choose a puzzle first", "warn")
                from db.review import requeue
                with ctx.Session() as s:
                    requeue(s, uid, pid, reason="zero-variance group in rollouts")
                return msg_html(f"{pid} is back in the curation queue")
        requeue.click(on_requeue, [puzzle], [msg], api_name="requeue")
    return demo

"""The rollouts page: pick a run, a checkpoint and a video; see each puzzle's G answers with the
reasoning, the chosen frames in the chosen order beside the true order, every reward term and the
advantage; how often each distractor fooled the model; zero-variance groups flagged (one click sends
the puzzle back to the curation queue); a second checkpoint side by side. Researchers and admins."""
from __future__ import annotations

import gradio as gr

from app.web.common import WebContext, guard, msg_html, nav_html
from app.web.pages import rollouts_steer
from app.web.templating import render
from db import rollout_views as rd
from mvp_core.reward import split_completion

PAGE = "rollouts"


def group_html(record: dict | None, answers: list[dict] | None, title: str) -> str:
    """One checkpoint's G answers to a puzzle, against the true order, and how often each distractor fooled it."""
    if record is None or not answers:
        return render("rollouts_group.html", title=title, answers=[])
    totals = [a["total"] for a in answers]
    shown = []
    for a in answers:
        reasoning, answer_text = split_completion(a["completion"] or "")
        shown.append({**a, "reasoning": reasoning, "answer_text": answer_text})
    return render("rollouts_group.html", title=title, answers=shown, truth=record["answer"],
                  uris={o["label"]: o["uri"] for o in record["options"]}, fooled=rd.fooled(record, answers),
                  zero_variance=len(totals) > 1 and len({round(t, 9) for t in totals}) == 1)


def run_html(info: dict) -> str:
    if not info:
        return ""
    model = info.get("model_path") or ""
    random_weights = "tiny" in model.lower() or bool((info.get("config") or {}).get("random_weights"))
    return render("rollouts_run.html", info=info, model=model, random_weights=random_weights)


def build(ctx: WebContext) -> gr.Blocks:
    with gr.Blocks(title="MVP Studio · Rollouts") as demo:
        nav = gr.HTML()
        with gr.Row():
            run = gr.Dropdown(label="Run", choices=[], elem_id="ro-run")
            ckpt = gr.Dropdown(label="Checkpoint", choices=[], elem_id="ro-ckpt")
            ckpt2 = gr.Dropdown(label="Compare with checkpoint", choices=[], elem_id="ro-ckpt2")
            video = gr.Dropdown(label="Video", choices=[], elem_id="ro-video")
        info = gr.HTML()
        puzzle = gr.Dropdown(label="Puzzle (G answers · mean · std)", choices=[], elem_id="ro-puzzle")
        with gr.Row():
            requeue = gr.Button("Send this puzzle back to the curation queue", elem_id="ro-requeue")
        msg = gr.HTML(elem_id="ro-msg")
        with gr.Row(elem_classes=["mvp-side"]):
            left = gr.HTML(elem_id="ro-left")
            right = gr.HTML(elem_id="ro-right")
        rollouts_steer.build_panel(ctx, run, puzzle)   # steered vs unsteered answer (docs/steer.md)

        def on_load(request: gr.Request):
            with guard(ctx, request, PAGE):
                with ctx.Session() as s:
                    choices = rd.runs(s)
                first = choices[0][1] if choices else None
                return (nav_html(ctx, request.username, PAGE), gr.update(choices=choices, value=first),
                        msg_html("" if choices else "No rollouts stored yet: run `mvp rollout ...` first.", "warn"))
        demo.load(on_load, None, [nav, run, msg])

        def on_run(run_id, request: gr.Request):
            with guard(ctx, request, PAGE):
                if not run_id:
                    return gr.update(choices=[], value=None), gr.update(choices=[], value=None), ""
                with ctx.Session() as s:
                    cks, inf = rd.checkpoints(s, run_id), rd.run_info(s, run_id)
                first = cks[0][1] if cks else None
                return (gr.update(choices=cks, value=first),
                        gr.update(choices=[("(none)", "")] + cks, value=""), run_html(inf))
        run.change(on_run, [run], [ckpt, ckpt2, info], api_name="run_checkpoints")

        def on_ckpt(run_id, ck, request: gr.Request):
            with guard(ctx, request, PAGE):
                if not run_id or ck is None:
                    return gr.update(choices=[], value=None)
                with ctx.Session() as s:
                    vids = rd.videos(s, run_id, ck)
                return gr.update(choices=vids, value=vids[0][1] if vids else None)
        ckpt.change(on_ckpt, [run, ckpt], [video], api_name="run_videos")

        def on_video(run_id, ck, vid, request: gr.Request):
            with guard(ctx, request, PAGE):
                if not run_id or not vid:
                    return gr.update(choices=[], value=None)
                with ctx.Session() as s:
                    ps = rd.puzzles(s, run_id, ck, vid)
                return gr.update(choices=[(p.label, p.puzzle_id) for p in ps],
                                 value=ps[0].puzzle_id if ps else None)
        video.change(on_video, [run, ckpt, video], [puzzle], api_name="video_puzzles")

        def show(run_id, ck, ck2, pid, request: gr.Request):
            with guard(ctx, request, PAGE):
                if not run_id or not pid:
                    return "", ""
                with ctx.Session() as s:
                    rec = rd.record_seen(s, run_id, pid)
                    a = rd.group(s, run_id, ck, pid)
                    names = dict((k, lab) for lab, k in rd.checkpoints(s, run_id))
                    b = rd.group(s, run_id, ck2, pid) if ck2 else None
                left_html = group_html(rec, a, f"{pid} · {names.get(ck, ck)}")
                right_html = group_html(rec, b, f"{pid} · {names.get(ck2, ck2)}") if b is not None else ""
                return left_html, right_html
        puzzle.change(show, [run, ckpt, ckpt2, puzzle], [left, right], api_name="group")
        ckpt2.change(show, [run, ckpt, ckpt2, puzzle], [left, right], api_name="group_compare")

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

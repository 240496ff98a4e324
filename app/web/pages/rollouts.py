"""The rollouts page: pick a run, a checkpoint and a video; see each puzzle's G answers with the
reasoning, the chosen frames in the chosen order beside the true order, every reward term and the
advantage; how often each distractor fooled the model; zero-variance groups flagged (one click sends
the puzzle back to the curation queue); a second checkpoint side by side. Researchers and admins."""
from __future__ import annotations

import re

import gradio as gr

from app.web.common import WebContext, esc, guard, msg_html, nav_html
from app.web.files import frame_url
from app.web.pages import rollouts_steer
from db import rollout_views as rd

PAGE = "rollouts"
_THINK = re.compile(r"<think>(.*?)</think>", re.S | re.I)
_ANSWER = re.compile(r"<answer>(.*?)</answer>", re.S | re.I)


def _thumb(uri: str | None, label: str, cls: str = "") -> str:
    if uri is None:
        return f'<span class="{cls}" title="not an option">{esc(label)}?</span>'
    return f'<figure class="{cls}"><img src="{frame_url(uri)}" alt="{esc(label)}"><figcaption>{esc(label)}</figcaption></figure>'


def group_html(record: dict | None, answers: list[dict], title: str) -> str:
    if record is None or not answers:
        return f'<div class="mvp-rollouts"><h4>{esc(title)}</h4><p>No answers for this puzzle here.</p></div>'
    uri = {o["label"]: o["uri"] for o in record["options"]}
    truth = record["answer"]
    true_seq = "".join(_thumb(uri.get(l), l, "ok") for l in truth)
    totals = [a["total"] for a in answers]
    zero = len(set(round(t, 9) for t in totals)) == 1 and len(totals) > 1
    flag = (f'<div class="mvp-flag" data-zero-variance="1">Zero-variance group: all {len(answers)} answers '
            f'scored {totals[0]:.3f}, so GRPO learns nothing from this puzzle.</div>' if zero else "")
    rows = []
    for a in answers:
        think = _THINK.search(a["completion"] or "")
        ans = _ANSWER.search(a["completion"] or "")
        reasoning = think.group(1).strip() if think else (a["completion"] or "")
        chosen = "".join(_thumb(uri.get(l), l, "ok" if i < len(truth) and truth[i] == l else "bad")
                         for i, l in enumerate(a["chosen"])) or "<i>none</i>"
        adv = f'{a["advantage"]:+.3f}' + ("*" if a["advantage_computed"] else "")
        rows.append(
            f'<tr class="mvp-answer-row" data-sample="{a["sample"]}"><td>{a["sample"]}</td>'
            f'<td><div class="mvp-think">{esc(reasoning)}</div>'
            f'<div class="mvp-cap">answer: {esc(ans.group(1).strip() if ans else "(none)")}</div></td>'
            f'<td><div class="mvp-seq">{chosen}</div></td>'
            f'<td>{a["format"]:.2f}</td><td>{a["selection"]:.2f}</td><td>{a["order"]:.2f}</td>'
            f'<td>{a["exact"]:.2f}</td><td class="mvp-total"><b>{a["total"]:.3f}</b></td><td>{adv}</td></tr>')
    fooled = "".join(
        f'<tr><td>{_thumb(d["uri"], d["label"])}</td><td>{esc(d["kind"])}</td><td>{d["difficulty"]:.2f}</td>'
        f'<td>{d["chosen"]} / {len(answers)}</td><td>{100 * d["rate"]:.0f}%</td></tr>'
        for d in rd.fooled(record, answers))
    note = ('<div class="mvp-cap">* advantage not stored by the run; shown group-normalised '
            '((r - mean) / std).</div>' if any(a["advantage_computed"] for a in answers) else "")
    return (f'<div class="mvp-rollouts" data-answers="{len(answers)}"><h4>{esc(title)}</h4>{flag}'
            f'<div>true order: <div class="mvp-seq">{true_seq}</div></div>'
            f'<table><tr><th>#</th><th>reasoning</th><th>chosen, in order</th><th>format</th><th>selection</th>'
            f'<th>order</th><th>exact</th><th>total</th><th>advantage</th></tr>{"".join(rows)}</table>{note}'
            f'<h4>Distractors: how often each fooled the model</h4>'
            f'<table><tr><th>option</th><th>kind</th><th>difficulty</th><th>chosen</th><th>rate</th></tr>'
            f'{fooled}</table></div>')


def run_html(info: dict) -> str:
    if not info:
        return ""
    model = info.get("model_path") or ""
    warn = ""
    if "tiny" in model.lower() or (info.get("config") or {}).get("random_weights"):
        warn = ' <b class="mvp-rej">(random-weight model: answers are noise, for demonstration)</b>'
    return (f'<div class="mvp-cap">run <code>{esc(info["id"])}</code> · {esc(info["kind"])} · model '
            f'<code>{esc(model)}</code> · set {esc(info.get("set_name") or "-")}{warn}</div>')


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

"""HTML of the Rollouts page: the puzzle (context filmstrip with the gap, the option pool with each
option's kind, the prompt the model was given) and one answer group per model version, each
answer with its reasoning, its chosen frames shown in the gap, every reward term and the training
advantage; how often each distractor fooled the model. Pure functions of records and rows."""
from __future__ import annotations

from app.web.common import esc
from app.web.files import frame_url
from app.web.pages.curate.view import filmstrip_html
from db.runs import rollout_views as rd
from db.runs.names import trainer_name
from mvp_core.puzzle import Puzzle

from mvp_core.reward import split_completion


def prompt_text(record: dict, run_config: dict) -> str:
    """The prompt's text as the model got it (images as [image: ...] markers), with the run's
    prompt settings (video mode)."""
    from mvp_core.model.prompt import PromptConfig, render_messages
    cfg = PromptConfig(video_mode=bool(run_config.get("video_mode", False)))
    out = []
    for msg in render_messages(record, cfg):
        for part in msg["content"]:
            if part["type"] == "text":
                out.append(part["text"])
            elif part["type"] == "image":
                out.append(f"[image: {part['image'].rsplit('/', 1)[-1]}]")
            else:
                out.append(f"[video: {len(part['video'])} frames]")
        out.append("\n")
    return "".join(out).strip()


def puzzle_html(record: dict | None, run_config: dict) -> str:
    if record is None:
        return '<div id="ro-puzzle-view" data-puzzle-id="">Choose a puzzle.</div>'
    pz = Puzzle.from_dict(record)
    opts = "".join(
        f'<figure class="mvp-opt{" mvp-target" if o.kind == "target" else ""}" data-label="{esc(o.label)}">'
        f'<img src="{frame_url(o.uri)}" alt="option {esc(o.label)}"><figcaption><b>{esc(o.label)}</b> '
        f'<span class="mvp-cap">{esc(o.kind)} · {o.difficulty:.2f}</span></figcaption></figure>' for o in pz.options)
    return (f'<div id="ro-puzzle-view" data-puzzle-id="{esc(pz.id)}">'
            f'<div class="mvp-phead"><span>puzzle <code>{esc(pz.id)}</code></span>'
            f'<span>video {esc(pz.video.path.rsplit("/", 1)[-1])}</span>'
            f'<span>answer: <b>{esc(", ".join(pz.answer))}</b></span></div>'
            f'<h4>Context and the gap</h4>{filmstrip_html(pz, answered=False)}'
            f'<h4>Options</h4><div class="mvp-pool">{opts}</div>'
            f'<details class="mvp-prompt"><summary>The prompt</summary><pre id="ro-prompt">'
            f'{esc(prompt_text(record, run_config))}</pre></details></div>')


def _thumb(uri: str | None, label: str, cls: str = "") -> str:
    if uri is None:
        return f'<span class="{cls}" title="not an option">{esc(label)}?</span>'
    return f'<figure class="{cls}"><img src="{frame_url(uri)}" alt="{esc(label)}"><figcaption>{esc(label)}</figcaption></figure>'


def in_gap_html(record: dict, chosen: list[str]) -> str:
    """The context with this answer's chosen frames in the gap: green where the frame is the right
    one in the right place, red otherwise; empty slots where it chose too few."""
    uri = {o["label"]: o["uri"] for o in record["options"]}
    truth = record["answer"]
    start, m = record["mask"]["start"], record["mask"]["length"]
    frames = record["frames"]
    # one context frame each side: enough to read the gap, narrow enough for two columns
    before = "".join(_thumb(f["uri"], f"{f['t']:.1f}s", "ctx") for f in frames[:start][-1:])
    after = "".join(_thumb(f["uri"], f"{f['t']:.1f}s", "ctx") for f in frames[start + m:][:1])
    slots = []
    for i in range(m):
        if i < len(chosen):
            lab = chosen[i]
            slots.append(_thumb(uri.get(lab), lab, "ok" if truth[i] == lab else "bad"))
        else:
            slots.append('<span class="mvp-slot-empty">?</span>')
    extra = "".join(_thumb(uri.get(lab), lab, "bad") for lab in chosen[m:]) or ("" if chosen else "<i>none</i>")
    return (f'<div class="mvp-seq mvp-ingap">{before}<div class="mvp-gap mvp-seq">{"".join(slots)}{extra}</div>'
            f'{after}</div>')


def group_html(record: dict | None, answers: list[dict] | None, title: str) -> str:
    if record is None or not answers:
        return f'<div class="mvp-rollouts" data-answers="0"><h4>{esc(title)}</h4><p>No answers for this puzzle here.</p></div>'
    totals = [a["total"] for a in answers]
    zero = len({round(t, 9) for t in totals}) == 1 and len(totals) > 1
    flag = (f'<div class="mvp-flag" data-zero-variance="1">Zero-variance group: all {len(answers)} answers '
            f'scored {totals[0]:.3f}, so GRPO learns nothing from this puzzle.</div>' if zero else "")
    mean = sum(totals) / len(totals)
    exact = sum(a["exact"] for a in answers) / len(answers)
    rows = []
    for a in answers:
        reasoning, answer_text = split_completion(a["completion"] or "")
        rows.append(
            f'<tr class="mvp-answer-row" data-sample="{a["sample"]}" data-total="{a["total"]:.6f}" '
            f'data-advantage="{a["advantage"]:.6f}"><td>{a["sample"]}</td>'
            f'<td><div class="mvp-think">{esc(reasoning)}</div>'
            f'<div class="mvp-cap">answer: {esc(answer_text if answer_text is not None else "(none)")}</div></td>'
            f'<td>{in_gap_html(record, a["chosen"])}</td>'
            f'<td class="mvp-terms">format {a["format"]:.2f}<br>selection {a["selection"]:.2f}<br>'
            f'order {a["order"]:.2f}<br>exact {a["exact"]:.2f}</td>'
            f'<td class="mvp-total"><b>{a["total"]:.3f}</b></td>'
            f'<td class="mvp-adv">{a["advantage"]:+.3f}{"*" if a.get("advantage_computed") else ""}</td></tr>')
    fooled = "".join(
        f'<tr><td>{_thumb(d["uri"], d["label"])}</td><td>{esc(d["kind"])}</td><td>{d["difficulty"]:.2f}</td>'
        f'<td>{d["chosen"]} / {len(answers)}</td><td>{100 * d["rate"]:.0f}%</td></tr>'
        for d in rd.fooled(record, answers))
    return (f'<div class="mvp-rollouts" data-answers="{len(answers)}"><h4>{esc(title)}</h4>{flag}'
            f'<div class="mvp-cap">G={len(answers)} · mean reward {mean:.3f} · exact {exact:.2f} · advantage: '
            f'{esc(rd.ADVANTAGE_RULES[answers[0].get("advantage_rule", "group")])}</div>'
            f'<table class="mvp-answers"><tr><th>#</th><th>reasoning</th><th>chosen frames, in the gap</th>'
            f'<th>reward terms</th>'
            f'<th>total</th><th>adv.</th></tr>{"".join(rows)}'
            f'</table><h4>Distractors: how often each fooled the model</h4>'
            f'<table><tr><th>option</th><th>kind</th><th>difficulty</th><th>chosen</th><th>rate</th></tr>'
            f'{fooled}</table></div>')


def run_html(info: dict) -> str:
    if not info:
        return ""
    model = info.get("model_path") or ""
    warn = ""
    if any(w in model.lower() for w in ("tiny", "random")) or (info.get("config") or {}).get("random_weights"):
        warn = ' <b class="mvp-rej">(random-weight model: answers are noise, for demonstration)</b>'
    return (f'<div class="mvp-cap">{esc(trainer_name(info["kind"]))} run <code>{esc(info["id"])}</code> · '
            f'started from {esc(info.get("start") or "")} <code>{esc(info.get("base_model_path") or model)}</code>'
            f' · set {esc(info.get("set_name") or "-")}{warn}</div>')

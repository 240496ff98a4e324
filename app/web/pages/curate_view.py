"""HTML for the curate page: the context filmstrip with the gap, the option pool, progress, rubric.

Solve first, then vet. Until the curator has answered a puzzle (`answer` is None) the view is
*blind*: nothing in it differs between targets and distractors (no kind, difficulty, timestamp or
answer, the masked frames are not named, every option card is built by the same code with the same
classes), so neither the page nor its network answers tell which options are targets. Once answered,
the gap is filled with the true frames, the curator's answer is scored beside the true one, targets
are marked and the distractors can be vetted with reasons.

Pure functions of the puzzle record and the curator's current state, so the server renders one string
per action and the browser swaps it in. Frames are 240 px thumbnails (`/thumb`); play-in-gap uses the
full-size frames, named by `data-full` (static/curate.js)."""
from __future__ import annotations

from app.web.common import esc
from app.web.files import frame_url
from mvp_core.puzzle import Puzzle

REASON_TITLES = {"near_duplicate": "looks the same as a target or a shown frame",
                 "ambiguous": "could also fit the gap", "too_easy": "obviously wrong (teaches nothing)",
                 "broken_frame": "broken, black or blank frame", "other": "other (write a note)"}


def _frame(uri: str, caption: str, cls: str = "mvp-frame") -> str:
    return (f'<figure class="{cls}" data-full="{frame_url(uri, thumb=False)}"><img src="{frame_url(uri)}" '
            f'alt="" loading="eager" decoding="async"><figcaption class="mvp-cap">{caption}</figcaption></figure>')


def filmstrip_html(p: Puzzle, answered: bool) -> str:
    """Context frames in order with the gap where the masked run was: empty slots while blind (the
    curator's picks go there), the true frames once answered."""
    before = [_frame(f.uri, f"{f.t:.2f}s") for f in p.context_before]
    after = [_frame(f.uri, f"{f.t:.2f}s") for f in p.context_after]
    if answered:
        by_uri = {o.uri: o.label for o in p.options}
        slots = "".join(_frame(f.uri, f"{esc(by_uri.get(f.uri, '?'))} · {f.t:.2f}s", "mvp-gap-slot filled")
                        for f in p.targets)
    else:
        slots = "".join(f'<div class="mvp-gap-slot" data-slot="{i}">?</div>' for i in range(p.mask.length))
    gap = (f'<div class="mvp-gap" id="mvp-gap" title="the masked run: {p.mask.length} frames">'
           f'<div class="mvp-gap-slots">{slots}</div><div class="mvp-cap">gap ({p.mask.length})</div></div>')
    return f'<div class="mvp-filmstrip">{"".join(before)}{gap}{"".join(after)}</div>'


def _option_blind(i: int, o) -> str:
    key = f'<kbd>{i + 1}</kbd>' if i < 9 else ""
    return (f'<figure class="mvp-opt" data-label="{esc(o.label)}" data-index="{i + 1}" '
            f'data-full="{frame_url(o.uri, thumb=False)}"><img src="{frame_url(o.uri)}" alt="option {esc(o.label)}" '
            f'loading="eager" decoding="async"><figcaption>{key}<b>{esc(o.label)}</b></figcaption></figure>')


def _option_vetted(i: int, o, ov: dict | None) -> str:
    key = f'<kbd>{i + 1}</kbd>' if i < 9 else ""
    if o.kind == "target":
        cls, state, data_state = "mvp-opt target", '<span class="mvp-tgt">target</span>', "target"
    elif ov is not None and ov.get("verdict") == "reject":
        cls, data_state = "mvp-opt rejected", "reject"
        state = f'<span class="mvp-rej">rejected: {esc(ov.get("reason_code") or "")}</span>'
    else:
        cls, state, data_state = "mvp-opt", '<span class="mvp-keep">keep</span>', "keep"
    meta = f'<div class="mvp-meta" data-kind="{esc(o.kind)}">{esc(o.kind)} · difficulty {o.difficulty:.2f} · {o.t:.2f}s</div>'
    return (f'<figure class="{cls}" data-label="{esc(o.label)}" data-index="{i + 1}" data-state="{data_state}" '
            f'data-full="{frame_url(o.uri, thumb=False)}"><a href="{frame_url(o.uri, thumb=False)}" target="_blank" '
            f'title="full size"><img src="{frame_url(o.uri)}" alt="option {esc(o.label)}" loading="eager" '
            f'decoding="async"></a><figcaption>{key}<b>{esc(o.label)}</b> {state}</figcaption>{meta}</figure>')


def pool_html(p: Puzzle, option_verdicts: dict[str, dict], answered: bool) -> str:
    cards = [_option_vetted(i, o, option_verdicts.get(o.label)) if answered else _option_blind(i, o)
             for i, o in enumerate(p.options)]
    return f'<div class="mvp-pool">{"".join(cards)}</div>'


def answer_html(p: Puzzle, ans: dict) -> str:
    ok = ans["exact"] >= 1.0
    return (f'<div class="mvp-your-answer {"ok" if ok else "bad"}" id="mvp-your-answer">'
            f'your answer: <b>{esc(", ".join(ans["labels"]))}</b> · the answer: <b>{esc(", ".join(p.answer))}</b> · '
            f'{"exact match" if ok else "not exact"} · reward {ans["total"]:.2f} · {ans["seconds"]:.1f} s</div>')


def puzzle_html(p: Puzzle | None, option_verdicts: dict[str, dict], my_verdict: dict | None,
                status: str, answer: dict | None, video_name: str = "") -> str:
    if p is None:
        return ('<div id="mvp-puzzle" data-puzzle-id="" data-phase="none" class="mvp-empty">Nothing left to '
                'review. Thank you! (<kbd>u</kbd> undoes your last verdict, <kbd>←</kbd> goes back.)</div>')
    answered = answer is not None
    mine = ""
    if my_verdict:
        mine = f'<span class="mvp-mine mvp-v-{esc(my_verdict["verdict"])}">your verdict: {esc(my_verdict["verdict"])}</span>'
    name = video_name or p.video.path.rsplit("/", 1)[-1]
    head = (f'<div class="mvp-phead"><span>puzzle <code>{esc(p.id)}</code></span>'
            f'<span title="video {esc(p.video.id)}">video <b class="mvp-video-name">{esc(name)}</b></span>'
            f'<span>status: {esc(status)}</span>{mine}'
            f'<a class="mvp-deeplink" href="?puzzle={esc(p.id)}">link</a>'
            f'<a class="mvp-deeplink" href="?video={esc(p.video.id)}">all puzzles of this video</a></div>')
    if answered:
        task = (f'{answer_html(p, answer)}<h4>Vet the distractors (<kbd>1</kbd>–<kbd>9</kbd> reject/keep with the '
                f'selected reason), then judge the puzzle (<kbd>a</kbd> accept, <kbd>r</kbd> reject)</h4>')
    else:
        task = (f'<h4 class="mvp-solve">Solve first: press the numbers of the {p.mask.length} options that fill '
                f'the gap, in order (<kbd>Backspace</kbd> takes one back, <kbd>Enter</kbd> answers, '
                f'<kbd>p</kbd> plays your picks in the gap)</h4>')
    phase = "vet" if answered else "answer"
    revealed = f' data-answer="{esc(",".join(p.answer))}"' if answered else ""
    return (f'<div id="mvp-puzzle" data-puzzle-id="{esc(p.id)}" data-phase="{phase}" data-m="{p.mask.length}"{revealed}>{head}'
            f'{filmstrip_html(p, answered)}{task}{pool_html(p, option_verdicts, answered)}</div>')


def progress_html(prog: dict) -> str:
    total = prog.get("total", 0) or 0
    ev = prog.get("everyone", {})
    mine = prog.get("mine", {})
    done = ev.get("reviewed", 0)
    pct = 100.0 * done / total if total else 0.0
    return (f'<div class="mvp-progress" data-reviewed="{done}" data-total="{total}">'
            f'<div class="mvp-bar"><div style="width:{pct:.1f}%"></div></div>'
            f'<span>everyone: <b>{done}</b> / {total} puzzles reviewed ({ev.get("verdicts", 0)} verdicts)</span>'
            f'<span>mine: <b id="mvp-mine-reviewed">{mine.get("reviewed", 0)}</b> verdicts, '
            f'{mine.get("accepted", 0)} accepted, {mine.get("rejected", 0)} rejected, '
            f'{mine.get("skipped", 0)} skipped (not verdicts)</span></div>')


RUBRIC_HTML = """<details id="mvp-rubric" class="mvp-rubric" open><summary>Rubric</summary>
<p><b>Solve first, then vet.</b> Answer each puzzle as the model must: the options that fill the gap,
in temporal order. Only then are the true frames shown.</p>
<p><b>Accept</b> a puzzle when the true frames are the only sensible way to fill the gap, in that order,
and at least two distractors are plausible but wrong. <b>Reject</b> it when the gap can be filled another
way, the context does not constrain it, or frames are broken. <b>Skip</b> when unsure: a skip is not a
verdict, and the puzzle comes back at the end of your queue.</p>
<p>Reject a distractor with a reason: """ + "; ".join(
    f"<code>{k}</code> {v}" for k, v in REASON_TITLES.items()) + """.</p></details>"""


HELP_HTML = """<div id="mvp-help" class="mvp-help" hidden>
<h4>Keys (ignored while typing in a text box)</h4>
<table>
<tr><td colspan="2"><b>Solving</b> (before your answer)</td></tr>
<tr><td><kbd>1</kbd>–<kbd>9</kbd></td><td>put option N into the next gap slot</td></tr>
<tr><td><kbd>Backspace</kbd></td><td>take the last pick back</td></tr>
<tr><td><kbd>Enter</kbd></td><td>answer (the targets are shown after)</td></tr>
<tr><td colspan="2"><b>Vetting</b> (after your answer)</td></tr>
<tr><td><kbd>1</kbd>–<kbd>9</kbd></td><td>toggle distractor N: keep ↔ reject (with the selected reason)</td></tr>
<tr><td><kbd>c</kbd></td><td>cycle the reject reason</td></tr>
<tr><td><kbd>a</kbd> / <kbd>r</kbd></td><td>accept / reject the puzzle</td></tr>
<tr><td colspan="2"><b>Always</b></td></tr>
<tr><td><kbd>p</kbd></td><td>play the sequence in the gap (your picks; after answering, the true frames)</td></tr>
<tr><td><kbd>Shift</kbd>+<kbd>1</kbd>–<kbd>9</kbd></td><td>play option N alone in the gap</td></tr>
<tr><td><kbd>s</kbd></td><td>skip (not a verdict; it comes back at the end of your queue)</td></tr>
<tr><td><kbd>u</kbd></td><td>undo your last verdict</td></tr>
<tr><td><kbd>←</kbd> / <kbd>→</kbd></td><td>previous / next puzzle of this session</td></tr>
<tr><td><kbd>?</kbd></td><td>show / hide this help</td></tr>
</table></div>"""


def _list_row(r: dict) -> str:
    pid = esc(r["puzzle_id"])
    mine_answer = "" if r["answered"] is None else ("exact" if r["answered"] >= 1 else "wrong")
    hardest = "" if r["difficulty"] is None else f'{r["difficulty"]:.2f}'
    return (f'<tr data-puzzle-id="{pid}"><td><a href="?puzzle={pid}"><code>{pid}</code></a></td>'
            f'<td>{esc(r["video"])}</td><td>{esc(r["status"])}</td><td>{r["n_reviews"]}</td>'
            f'<td>{esc(r["mine"] or "")}</td><td>{mine_answer}</td><td>{hardest}</td></tr>')


def list_html(rows: list[dict]) -> str:
    """The filtered puzzles (the per-video view when filtered by video) as a table of links."""
    if not rows:
        return ""
    return ('<table class="mvp-list" id="mvp-puzzle-list"><thead><tr><th>puzzle</th><th>video</th><th>status</th>'
            '<th>verdicts</th><th>mine</th><th>my answer</th><th>hardest distractor</th></tr></thead>'
            f'<tbody>{"".join(_list_row(r) for r in rows)}</tbody></table>')

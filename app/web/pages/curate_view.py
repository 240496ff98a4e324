"""HTML for the curate page: the context filmstrip with the gap marked, the option pool, progress.

Pure functions of the puzzle record and the curator's current verdicts, so the server renders one
string per action and the browser swaps it in (one round trip, no extra requests but the images).
Frames are shown as 240 px thumbnails (`/thumb`, made once per frame and kept on disk): decoding
fifteen 640 px frames per puzzle was most of the browser's time on a busy machine. The next puzzle's
thumbnails are requested (so made) while the curator looks at the current one. Blind review: an option's kind and difficulty are only put into the HTML when revealed, so they
cannot be read from the page source either."""
from __future__ import annotations

from app.web.common import esc
from app.web.files import frame_url
from mvp_core.puzzle import Puzzle

REASON_TITLES = {"near_duplicate": "near duplicate of a target", "ambiguous": "could also fit the gap",
                 "too_easy": "too easy (obviously wrong)", "broken_frame": "broken / black frame",
                 "other": "other"}


def filmstrip_html(p: Puzzle) -> str:
    cells = []
    for i, f in enumerate(p.frames):
        if p.mask.start <= i < p.mask.start + p.mask.length:
            if i == p.mask.start:
                slots = "".join('<div class="mvp-gap-slot">?</div>' for _ in range(p.mask.length))
                cells.append(f'<div class="mvp-gap" title="the masked run: {p.mask.length} frames">'
                             f'<div class="mvp-gap-slots">{slots}</div>'
                             f'<div class="mvp-cap">gap ({p.mask.length})</div></div>')
            continue
        cells.append(f'<figure class="mvp-frame"><img src="{frame_url(f.uri)}" alt="frame {i}" '
                     f'loading="eager" decoding="async"><figcaption class="mvp-cap">{f.t:.2f}s</figcaption>'
                     f'</figure>')
    return f'<div class="mvp-filmstrip">{"".join(cells)}</div>'


def pool_html(p: Puzzle, option_verdicts: dict[str, dict], reveal: bool) -> str:
    cards = []
    for i, o in enumerate(p.options):
        ov = option_verdicts.get(o.label)
        rejected = ov is not None and ov.get("verdict") == "reject"
        state = (f'<span class="mvp-rej">rejected: {esc(ov.get("reason_code") or "")}</span>' if rejected
                 else '<span class="mvp-keep">keep</span>')
        meta = ""
        if reveal:
            meta = (f'<div class="mvp-meta" data-kind="{esc(o.kind)}">{esc(o.kind)} · '
                    f'difficulty {o.difficulty:.2f} · {o.t:.2f}s</div>')
        key = f'<kbd>{i + 1}</kbd>' if i < 9 else ""
        cls = "mvp-opt rejected" if rejected else "mvp-opt"
        cards.append(f'<figure class="{cls}" data-label="{esc(o.label)}" data-state="{"reject" if rejected else "keep"}">'
                     f'<a href="{frame_url(o.uri, thumb=False)}" target="_blank" title="full size">'
                     f'<img src="{frame_url(o.uri)}" alt="option {esc(o.label)}" loading="eager" decoding="async"></a>'
                     f'<figcaption>{key}<b>{esc(o.label)}</b> {state}</figcaption>{meta}</figure>')
    return f'<div class="mvp-pool">{"".join(cards)}</div>'


def puzzle_html(p: Puzzle | None, option_verdicts: dict[str, dict], my_verdict: dict | None,
                status: str, reveal: bool) -> str:
    if p is None:
        return ('<div id="mvp-puzzle" data-puzzle-id="" class="mvp-empty">Nothing left to review. '
                'Thank you! (<kbd>u</kbd> undoes your last verdict, <kbd>←</kbd> goes back.)</div>')
    mine = ""
    if my_verdict:
        mine = f'<span class="mvp-mine mvp-v-{esc(my_verdict["verdict"])}">your verdict: {esc(my_verdict["verdict"])}</span>'
    answer = ""
    if reveal:
        answer = f'<span class="mvp-answer">answer: {esc(", ".join(p.answer))}</span>'
    head = (f'<div class="mvp-phead"><span>puzzle <code>{esc(p.id)}</code></span>'
            f'<span>video <code>{esc(p.video.id)}</code> {esc(p.video.path.rsplit("/", 1)[-1])}</span>'
            f'<span>status: {esc(status)}</span>{mine}{answer}'
            f'<a class="mvp-deeplink" href="?puzzle={esc(p.id)}">link</a></div>')
    return (f'<div id="mvp-puzzle" data-puzzle-id="{esc(p.id)}">{head}'
            f'<h4>Context (in order; the gap is where the masked frames were)</h4>{filmstrip_html(p)}'
            f'<h4>Options (<kbd>1</kbd>–<kbd>9</kbd> reject/keep a distractor, '
            f'<kbd>Shift</kbd>+digit plays it in the gap)</h4>{pool_html(p, option_verdicts, reveal)}</div>')


def progress_html(prog: dict) -> str:
    total = prog.get("total", 0) or 0
    ev = prog.get("everyone", {})
    mine = prog.get("mine", {})
    done = ev.get("reviewed", 0)
    pct = 100.0 * done / total if total else 0.0
    return (f'<div class="mvp-progress" data-reviewed="{done}" data-total="{total}">'
            f'<div class="mvp-bar"><div style="width:{pct:.1f}%"></div></div>'
            f'<span>everyone: <b>{done}</b> / {total} puzzles reviewed ({ev.get("verdicts", 0)} verdicts)</span>'
            f'<span>mine: <b id="mvp-mine-reviewed">{mine.get("reviewed", 0)}</b> reviewed, '
            f'{mine.get("accepted", 0)} accepted, {mine.get("rejected", 0)} rejected, '
            f'{mine.get("skipped", 0)} skipped</span></div>')


HELP_HTML = """<div id="mvp-help" class="mvp-help" hidden>
<h4>Keys (ignored while typing in a text box)</h4>
<table>
<tr><td><kbd>1</kbd>–<kbd>9</kbd></td><td>toggle option N: keep ↔ reject (with the selected reason)</td></tr>
<tr><td><kbd>Shift</kbd>+<kbd>1</kbd>–<kbd>9</kbd></td><td>play option N in the gap</td></tr>
<tr><td><kbd>c</kbd></td><td>cycle the reject reason</td></tr>
<tr><td><kbd>a</kbd> / <kbd>r</kbd> / <kbd>s</kbd></td><td>accept / reject / skip the puzzle</td></tr>
<tr><td><kbd>u</kbd></td><td>undo your last verdict</td></tr>
<tr><td><kbd>←</kbd> / <kbd>→</kbd></td><td>previous / next puzzle of this session</td></tr>
<tr><td><kbd>v</kbd></td><td>reveal / hide kind and difficulty (blind review)</td></tr>
<tr><td><kbd>?</kbd></td><td>show / hide this help</td></tr>
</table></div>"""

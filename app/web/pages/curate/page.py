"""The curate page: solve each puzzle first, then vet it; keyboard first.

Solve first, then vet: while a curator has not answered a puzzle its view is blind (see
app/web/pages/curate/view.py); picking options into the gap happens in the browser only (no request,
so nothing to time), and the answer is one request that stores it (`db.review.human`) and returns the
revealed view. Distractor verdicts and accept/reject need that answer; a skip does not (a skip is
not a verdict).

Every action (answer, verdict, distractor toggle, undo, move, filter, open) is one JSON request
(app/web/pages/curate/api.py -> CurateActions) that returns the whole puzzle view as HTML, plus the puzzle a
verdict will most likely lead to, so app/web/pages/curate/curate.js can show it the moment a verdict key is
pressed. The per-browser-tab state is small: the current puzzle id, the puzzles seen before and
after it (for <- / ->) and the tab's queue filter (video, status, distractor kind, difficulty), which
every claim of the next puzzle honours (`db.review.next_puzzle(..., filt=...)`). All verdicts go
through `db.review`, which keeps the append-only history undo relies on."""
from __future__ import annotations

import json

import gradio as gr
from sqlalchemy import select

from app.web.common import WebContext, guard, nav_html, page_blocks
from app.web.pages.curate.view import (
    DEFAULT_REASON,
    HELP_HTML,
    NOTHING_LEFT,
    NOTHING_MATCHES,
    RUBRIC_HTML,
    filter_html,
    list_html,
    progress_html,
    puzzle_html,
)
from db.models import Puzzle as PuzzleRow
from db.models import Video
from db.models.curation import REASON_CODES, OptionVerdict, PuzzleVerdict, ReviewState
from db.review.browse import make_filter
from db.review.queue_rule import FILTER_STATUSES, QueueFilter
from mvp_core.errors import UserError
from mvp_core.puzzle import Puzzle

PAGE = "curate"
MAX_KEYS = 9


def new_state() -> dict:
    """The per-tab navigation state; the browser keeps it (in sessionStorage, so it survives a reload)
    and sends it with every action. It holds no rights: every write is checked against the session's
    user on the server. `filter` holds the queue filter's set parts (`make_filter` arguments)."""
    return {"pid": None, "back": [], "fwd": [], "filter": {}}


def filt_of(state: dict) -> QueueFilter:
    return make_filter(**(state.get("filter") or {}))


class CurateActions:
    """The handlers' logic, separate from the HTTP wiring; each returns the view dict of `view`."""

    def __init__(self, ctx: WebContext):
        self.ctx = ctx

    # ---- reading ------------------------------------------------------------------------------

    def render(self, s, uid: int, pid: str | None, filtered: bool = False) -> str:
        """The puzzle view's HTML for `pid` as this curator sees it: blind until they answered it."""
        from db.review.human import answer_of
        from db.models.curation import User
        from db.review.tags import TAG_ROLES, notes_of
        p, ovs, mine, status, ans, vname, notes = None, {}, None, "pending", None, "", None
        row = s.get(PuzzleRow, pid) if pid else None
        if row is not None:
            p = Puzzle.from_dict(json.loads(row.record_json))
            ans = answer_of(s, uid, pid)
            if ans is not None:
                ovs = {o.label: {"verdict": o.verdict, "reason_code": o.reason_code}
                       for o in s.scalars(select(OptionVerdict).where(OptionVerdict.puzzle_id == pid,
                                                                      OptionVerdict.user_id == uid))}
            pv = s.scalar(select(PuzzleVerdict).where(PuzzleVerdict.puzzle_id == pid,
                                                      PuzzleVerdict.user_id == uid))
            mine = {"verdict": pv.verdict} if pv is not None else None
            st = s.get(ReviewState, pid)
            status = st.status if st is not None else "pending"
            vpath = s.scalar(select(Video.path).where(Video.id == row.video_id))
            vname = (vpath or "").rsplit("/", 1)[-1]
            notes = notes_of(s, pid)
        user = s.get(User, uid)
        return puzzle_html(p, ovs, mine, status, ans, vname, NOTHING_MATCHES if filtered else NOTHING_LEFT, notes,
                           can_note=user is not None and user.role in TAG_ROLES)

    def view(self, s, uid: int, state: dict, msg: str = "", kind: str = "info") -> dict:
        """What the page shows after an action: the state, the current puzzle's HTML, a message, and
        `next`: the puzzle a verdict on this one will most likely lead to, rendered now, so the page
        can show it (images already decoded) the moment a verdict key is pressed, while the verdict is
        being recorded. Progress is fetched separately, so its counting queries stay off this path."""
        filtered = bool(state.get("filter"))
        return {"state": state, "html": self.render(s, uid, state.get("pid"), filtered),
                "msg": msg, "kind": kind, "next": self.predict(s, uid, state)}

    def predict(self, s, uid: int, state: dict) -> dict | None:
        """{pid, html} of the puzzle `verdict` will show next: the forward history's top, else the
        store's queue order under the tab's filter (`db.review.peek_next`, the queue rule read-only).
        None when nothing is shown (there is nothing to judge)."""
        from db.review import peek_next
        if not state.get("pid"):
            return None
        nxt = state["fwd"][-1] if state.get("fwd") else peek_next(s, uid, state.get("pid"), filt=filt_of(state))
        return {"pid": nxt, "html": self.render(s, uid, nxt, bool(state.get("filter")))}

    def progress(self, uid: int) -> str:
        from db.review import progress
        with self.ctx.Session() as s:
            return progress_html(progress(s, uid))

    # ---- actions ------------------------------------------------------------------------------

    def load(self, uid: int, deep_link: str | None, saved: dict | None = None):
        """The first view of a tab, or a puzzle opened from the list: a deep-linked puzzle (shown, not
        leased; the tab's history and filter are kept), else the tab's saved state (a reload keeps its
        place, history and filter), else the next puzzle of the queue."""
        from db.review import next_puzzle
        state = dict(saved) if saved else new_state()
        with self.ctx.Session() as s:
            if deep_link:
                if s.get(PuzzleRow, deep_link) is None:
                    state["pid"] = state.get("pid") or next_puzzle(s, uid, filt=filt_of(state))
                    return self.view(s, uid, state, f"no puzzle {deep_link!r}; showing the next one", "warn")
                if state.get("pid") and state["pid"] != deep_link:
                    state["back"] = [x for x in state.get("back", []) if x != deep_link] + [state["pid"]]
                state["pid"] = deep_link
            elif not (state.get("pid") and s.get(PuzzleRow, state["pid"]) is not None):
                state["pid"] = next_puzzle(s, uid, filt=filt_of(state))
            return self.view(s, uid, state)

    def answer(self, uid: int, state: dict, labels: list[str], seconds: float):
        """Store the curator's blind answer, then show the puzzle revealed (the targets in the gap)."""
        from db.review.human import record_answer
        with self.ctx.Session() as s:
            pid = state.get("pid")
            if not pid:
                return self.view(s, uid, state, "nothing to answer", "warn")
            res = record_answer(s, uid, pid, labels, seconds)
            verdict = "exact match" if res["exact"] >= 1 else "not exact"
            return self.view(s, uid, state, f"answered {', '.join(labels)}: {verdict}, reward {res['total']:.2f}")

    def verdict(self, uid: int, state: dict, verdict: str, note: str):
        from db.review.human import answer_of
        from db.review import DECISIVE, next_puzzle, submit_verdict
        state = dict(state)
        with self.ctx.Session() as s:
            pid = state.get("pid")
            if not pid:
                return self.view(s, uid, state, "nothing to judge", "warn")
            if s.get(PuzzleRow, pid) is None:
                raise UserError(f"no puzzle {pid!r}")
            if verdict in DECISIVE and answer_of(s, uid, pid) is None:
                return self.view(s, uid, state, ANSWER_FIRST, "warn")
            submit_verdict(s, uid, pid, verdict, reason=note or "")
            state["back"] = state.get("back", []) + [pid]
            fwd = list(state.get("fwd", []))
            state["pid"] = fwd.pop() if fwd else next_puzzle(s, uid, filt=filt_of(state))
            state["fwd"] = fwd
            return self.view(s, uid, state, f"{verdict}: {pid}")

    def toggle(self, uid: int, state: dict, index: int, reason: str, to: str | None = None):
        """Keep or reject option `index`: to `to` when given (a card's own Keep / Reject buttons), else
        the other way round (the digit key)."""
        from db.review.human import answer_of
        from db.review import set_option_verdict
        with self.ctx.Session() as s:
            pid = state.get("pid")
            row = s.get(PuzzleRow, pid) if pid else None
            if row is None:
                return self.view(s, uid, state, "no puzzle shown", "warn")
            if answer_of(s, uid, pid) is None:       # the same answer for every option: no hint
                return self.view(s, uid, state, ANSWER_FIRST, "warn")
            labels = [o["label"] for o in json.loads(row.record_json)["options"]]
            if not 1 <= index <= len(labels):
                return self.view(s, uid, state, f"this puzzle has only {len(labels)} options", "warn")
            label = labels[index - 1]
            cur = s.scalar(select(OptionVerdict.verdict).where(
                OptionVerdict.puzzle_id == pid, OptionVerdict.label == label, OptionVerdict.user_id == uid))
            reason = reason if reason in REASON_CODES else DEFAULT_REASON
            if (to or ("keep" if cur == "reject" else "reject")) == "keep":
                set_option_verdict(s, uid, pid, label, "keep")
                return self.view(s, uid, state, f"option {label}: keep")
            set_option_verdict(s, uid, pid, label, "reject", reason_code=reason)
            return self.view(s, uid, state, f"option {label}: rejected ({reason})")

    def undo(self, uid: int, state: dict):
        from db.review import undo_last
        state = dict(state)
        with self.ctx.Session() as s:
            res = undo_last(s, uid)
            if res is None:
                return self.view(s, uid, state, "nothing to undo", "warn")
            pid = res["puzzle_id"]
            if pid != state.get("pid"):
                back = [x for x in state.get("back", []) if x != pid]
                fwd = [x for x in state.get("fwd", []) if x != pid]
                if state.get("pid"):
                    fwd.append(state["pid"])
                state.update(pid=pid, back=back, fwd=fwd)
            what = f"option {res['label']}" if res["label"] else "verdict"
            return self.view(s, uid, state, f"undone: {what} on {pid}")

    def move(self, uid: int, state: dict, step: int):
        from db.review import next_puzzle
        state = dict(state)
        back, fwd = list(state.get("back", [])), list(state.get("fwd", []))
        with self.ctx.Session() as s:
            if step < 0:
                if not back:
                    return self.view(s, uid, state, "this is the first puzzle of this session", "warn")
                if state.get("pid"):
                    fwd.append(state["pid"])
                state["pid"] = back.pop()
            else:
                if not fwd:
                    nxt = next_puzzle(s, uid, filt=filt_of(state))
                    if nxt is None or nxt == state.get("pid"):
                        return self.view(s, uid, state, "newest puzzle: judge it (a/r) or skip it (s)", "warn")
                    fwd = [nxt]
                if state.get("pid"):
                    back.append(state["pid"])
                state["pid"] = fwd.pop()
            state.update(back=back, fwd=fwd)
            return self.view(s, uid, state)

    def filter(self, uid: int, state: dict, filters: dict):
        """Set the tab's queue filter: the next puzzle is the queue's next one among the matching
        puzzles (the shown one stays if it matches and is leased to me; one I had not judged yet is
        given back to the queue, not kept from others). Returns the view plus the list of every
        matching puzzle in any status (`list`: the per-video view when filtered by video)."""
        from db.review import next_puzzle, release
        from db.review.browse import find_puzzles
        f = make_filter(**filters)
        state = {**state, "filter": filters, "fwd": []}
        with self.ctx.Session() as s:
            rows = find_puzzles(s, uid, f)
            old = state.get("pid")
            state["pid"] = next_puzzle(s, uid, filt=f)
            if old and old != state["pid"]:
                if s.scalar(select(PuzzleVerdict.id).where(PuzzleVerdict.puzzle_id == old,
                                                           PuzzleVerdict.user_id == uid)) is None:
                    release(s, uid, old)
                state["back"] = [x for x in state.get("back", []) if x != old] + [old]
            if not filters:
                msg, kind = "filter cleared: the whole queue", "info"
            elif state["pid"] is None:
                msg, kind = f"{len(rows)} puzzles match; none is left in your queue (open one from the list)", "warn"
            else:
                msg, kind = f"{len(rows)} puzzles match; your queue now hands out only these", "info"
            out = self.view(s, uid, state, msg, kind)
            out["list"] = list_html(rows) if filters else ""
            return out


    def note(self, uid: int, state: dict, action: str, value: str, label: str = ""):
        """Tag (`value` the tag), untag or comment (`value` the text) on the shown puzzle, through
        `db.review.tags` (which checks the role); the puzzle's view re-rendered. Untag may name a
        distractor's tag (its remove button shows only once the puzzle is answered)."""
        from db.review import tags
        with self.ctx.Session() as s:
            pid = state.get("pid")
            if not pid:
                return self.view(s, uid, state, "no puzzle shown", "warn")
            if action == "tag":
                res = tags.add_tag(s, uid, pid, value)
                msg = f"tagged {res['tag']!r}"
            elif action == "untag":
                msg = f"tag {value.strip().lower()!r} removed" if tags.remove_tag(s, uid, pid, value, label) \
                    else f"no tag {value!r} to remove"
            else:
                tags.add_comment(s, uid, pid, value)
                msg = "comment added"
            return self.view(s, uid, state, msg)


ANSWER_FIRST = "solve first: pick the options that fill the gap in order (digits), then press Enter"


def _js(call: str) -> str:
    """A button's click handler in the page: the same function the hotkey calls (app/web/pages/curate/curate.js)."""
    return f"() => {{ window.mvpCurate && window.mvpCurate.{call}; }}"


def filter_bar(ctx: WebContext) -> str:
    """The queue filter (video by file name, status or "skipped", distractor kind, difficulty) as
    plain controls that app/web/pages/curate/curate.js reads when "Filter" is pressed."""
    from db.review.browse import option_kinds, video_names
    with ctx.Session() as s:
        names = sorted(video_names(s).items(), key=lambda kv: kv[1])
        kinds = option_kinds(s)
    return filter_html(names, list(FILTER_STATUSES), kinds)


def build(ctx: WebContext) -> gr.Blocks:
    """The page's layout. Gradio draws the chrome (nav, buttons, reason, note); the puzzle view, the
    message, progress and the list are plain <div>s that app/web/pages/curate/curate.js fills from the JSON API
    (app/web/pages/curate/api.py), so a verdict is one fetch instead of a Gradio queue/SSE round trip plus a
    re-render. Their gr.HTML values never change, so Gradio never redraws over what the script put
    there."""
    with page_blocks("Curate") as demo:
        nav = gr.HTML(elem_id="mvp-nav-bar")
        gr.HTML(VIEW_SWITCH_HTML, elem_id="mvp-viewswitch-box")
        # the gallery view (app/web/pages/curate/view_switch.js shows one of the two); gallery.js
        # starts only when it is first shown
        with gr.Column(elem_id="mvp-grid-view"):
            gr.HTML('<div id="mvp-gallery" data-gallery-api="/gallery/api/" data-gallery-url="hash" '
                    'data-gallery-lazy="1" data-gallery-open="curate"></div>', elem_id="mvp-gallery-box")
        with gr.Column(elem_id="mvp-one-view"):
            _one_puzzle_view(ctx, demo, nav)
    return demo


VIEW_SWITCH_HTML = ('<div class="mvp-viewswitch" role="group" aria-label="view">'
                    '<button type="button" class="mvp-btn" id="mvp-view-one" aria-pressed="true">One puzzle</button>'
                    '<button type="button" class="mvp-btn" id="mvp-view-grid" aria-pressed="false" '
                    'title="every puzzle as a card: select and act in bulk (g)">Gallery</button></div>')


def _one_puzzle_view(ctx: WebContext, demo: gr.Blocks, nav) -> None:
    """The one-puzzle view's components and events (inside the page's Blocks)."""
    gr.HTML(RUBRIC_HTML)
    gr.HTML('<div id="mvp-progress-box"></div>', elem_id="mvp-progress")
    gr.HTML('<div id="mvp-msg-box" aria-live="polite"></div>', elem_id="mvp-msg")
    gr.HTML('<div id="mvp-stage" data-curate-api="/curate/api/"></div>', elem_id="mvp-view")
    # the buttons' keys are added by static/studio.css where there is a keyboard and room (never on a phone)
    with gr.Row(elem_id="mvp-actions"):
        b_answer = gr.Button("Answer", variant="primary", elem_id="btn-answer")
        b_accept = gr.Button("Accept", variant="primary", elem_id="btn-accept")
        b_reject = gr.Button("Reject", variant="stop", elem_id="btn-reject")
        b_skip = gr.Button("Skip", elem_id="btn-skip")
        b_undo = gr.Button("Undo", elem_id="btn-undo")
        b_prev = gr.Button("← Prev", elem_id="btn-prev")
        b_next = gr.Button("Next →", elem_id="btn-next")
        b_play = gr.Button("Play in gap", elem_id="btn-play")
        b_help = gr.Button("Keys", elem_id="btn-help")
    with gr.Row():
        gr.Radio(list(REASON_CODES), value=DEFAULT_REASON, label="Reason for rejecting a distractor",
                 elem_id="mvp-reason", interactive=True)   # no event reads them: say so, or Gradio disables them
        gr.Textbox(label="Note on the puzzle verdict (optional)", elem_id="mvp-note", max_lines=2, interactive=True)
    filters = gr.HTML(elem_id="mvp-filter-bar")
    gr.HTML('<div id="mvp-list-box"></div>', elem_id="mvp-list")
    gr.HTML(HELP_HTML)

    def on_load(request: gr.Request):
        with guard(ctx, request, PAGE):
            return nav_html(ctx, request.username, PAGE), filter_bar(ctx)
    demo.load(on_load, None, [nav, filters], show_progress="hidden")
    demo.load(None, None, None, js=_js("start()"))

    for btn, call in ((b_answer, "submitAnswer()"), (b_accept, "verdict('accept')"),
                      (b_reject, "verdict('reject')"), (b_skip, "verdict('skip')"), (b_undo, "undo()"),
                      (b_prev, "move(-1)"), (b_next, "move(1)"), (b_play, "playPicks()")):
        btn.click(None, None, None, js=_js(call))
    b_help.click(None, None, None, js="() => window.mvpToggleHelp && window.mvpToggleHelp()")

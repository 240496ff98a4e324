"""The curate page: judge puzzles one at a time, keyboard first.

Every action (verdict, distractor toggle, undo, move, reveal, play) is one server round trip that
returns the whole puzzle view as HTML. The per-browser-tab state is small: the current puzzle id,
the puzzles seen before it (for <- / ->), and whether kind/difficulty are revealed. All verdicts go
through `db.review`, which keeps the append-only history undo relies on."""
from __future__ import annotations

import json
import time

import gradio as gr
from sqlalchemy import select

from app.curate_view import HELP_HTML, progress_html, puzzle_html
from app.web_common import WebContext, guard, msg_html, nav_html
from app.web_files import frame_url
from db.models import Puzzle as PuzzleRow
from db.models_curation import REASON_CODES, OptionVerdict, PuzzleVerdict, ReviewState
from mvp_core.puzzle import Puzzle

PAGE = "curate"
MAX_KEYS = 9
DEFAULT_REASON = "ambiguous"


def peek_next(s, uid: int, current: str | None) -> str | None:
    """A guess at the puzzle `next_puzzle` will hand out after the current one, without leasing it:
    the same order as the store's queue (closest to k reviews first, then by id), skipping puzzles
    this curator judged and ones leased to anyone."""
    from datetime import datetime, timezone

    from sqlalchemy import exists

    from db.models_curation import Lease
    from db.review import overlap_k
    now = datetime.now(timezone.utc)
    k = overlap_k(s)
    rs = ReviewState
    for n in range(k - 1, -1, -1):
        q = (select(rs.puzzle_id).where(
                rs.n_reviews == n, rs.puzzle_id != (current or ""),
                ~exists().where(PuzzleVerdict.puzzle_id == rs.puzzle_id, PuzzleVerdict.user_id == uid),
                ~exists().where(Lease.puzzle_id == rs.puzzle_id, Lease.expires_at > now))
             .order_by(rs.puzzle_id).limit(1))
        pid = s.scalar(q)
        if pid is not None:
            return pid
    return None


def _new_state() -> dict:
    return {"pid": None, "back": [], "fwd": [], "reveal": False}


class CurateActions:
    """The handlers' logic, separate from Gradio wiring so each returns (state, view, progress, msg)."""

    def __init__(self, ctx: WebContext):
        self.ctx = ctx

    # ---- reading ------------------------------------------------------------------------------

    def view(self, s, uid: int, state: dict, msg: str = "", kind: str = "info"):
        """(state, puzzle html, message html) for the current puzzle; progress comes in a second,
        chained event (`progress_html`) so its counting queries are off the verdict's critical path."""
        pid = state.get("pid")
        p, ovs, mine, status = None, {}, None, "pending"
        if pid:
            row = s.get(PuzzleRow, pid)
            if row is not None:
                p = Puzzle.from_dict(json.loads(row.record_json))
                ovs = {o.label: {"verdict": o.verdict, "reason_code": o.reason_code}
                       for o in s.scalars(select(OptionVerdict).where(OptionVerdict.puzzle_id == pid,
                                                                      OptionVerdict.user_id == uid))}
                pv = s.scalar(select(PuzzleVerdict).where(PuzzleVerdict.puzzle_id == pid,
                                                          PuzzleVerdict.user_id == uid))
                mine = {"verdict": pv.verdict} if pv is not None else None
                st = s.get(ReviewState, pid)
                status = st.status if st is not None else "pending"
        html = puzzle_html(p, ovs, mine, status, state.get("reveal", False)) + self.preload(s, uid, state)
        return state, html, msg_html(msg, kind)

    def preload(self, s, uid: int, state: dict) -> str:
        """Hidden <img>s of the puzzle most likely to come next, so the browser has its frames before the
        curator presses a key (hidden images are still fetched). A wrong guess costs one puzzle's frames."""
        nxt = state["fwd"][-1] if state.get("fwd") else peek_next(s, uid, state.get("pid"))
        row = s.get(PuzzleRow, nxt) if nxt else None
        if row is None:
            return ""
        rec = json.loads(row.record_json)
        uris = [f["uri"] for i, f in enumerate(rec["frames"])
                if not rec["mask"]["start"] <= i < rec["mask"]["start"] + rec["mask"]["length"]]
        uris += [o["uri"] for o in rec["options"]]
        return ('<div class="mvp-preload" hidden>' + "".join(
            f'<img src="{frame_url(u)}" alt="">' for u in uris) + "</div>")

    def progress(self, uid: int) -> str:
        from db.review import progress
        with self.ctx.Session() as s:
            return progress_html(progress(s, uid))

    # ---- actions ------------------------------------------------------------------------------

    def load(self, uid: int, deep_link: str | None):
        from db.review import next_puzzle
        state = _new_state()
        with self.ctx.Session() as s:
            if deep_link:
                if s.get(PuzzleRow, deep_link) is None:
                    state["pid"] = next_puzzle(s, uid)
                    return self.view(s, uid, state, f"no puzzle {deep_link!r}; showing the next one", "warn")
                state["pid"] = deep_link
            else:
                state["pid"] = next_puzzle(s, uid)
            return self.view(s, uid, state)

    def verdict(self, uid: int, state: dict, verdict: str, note: str):
        from db.review import next_puzzle, submit_verdict
        state = dict(state)
        with self.ctx.Session() as s:
            pid = state.get("pid")
            if not pid:
                return self.view(s, uid, state, "nothing to judge", "warn")
            submit_verdict(s, uid, pid, verdict, reason=note or "")
            state["back"] = state.get("back", []) + [pid]
            fwd = list(state.get("fwd", []))
            state["pid"] = fwd.pop() if fwd else next_puzzle(s, uid)
            state["fwd"] = fwd
            return self.view(s, uid, state, f"{verdict}: {pid}")

    def toggle(self, uid: int, state: dict, index: int, reason: str):
        from db.review import set_option_verdict
        with self.ctx.Session() as s:
            pid = state.get("pid")
            row = s.get(PuzzleRow, pid) if pid else None
            if row is None:
                return self.view(s, uid, state, "no puzzle shown", "warn")
            labels = [o["label"] for o in json.loads(row.record_json)["options"]]
            if not 1 <= index <= len(labels):
                return self.view(s, uid, state, f"this puzzle has only {len(labels)} options", "warn")
            label = labels[index - 1]
            cur = s.scalar(select(OptionVerdict.verdict).where(
                OptionVerdict.puzzle_id == pid, OptionVerdict.label == label, OptionVerdict.user_id == uid))
            reason = reason if reason in REASON_CODES else DEFAULT_REASON
            if cur == "reject":
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
                    nxt = next_puzzle(s, uid)
                    if nxt is None or nxt == state.get("pid"):
                        return self.view(s, uid, state, "newest puzzle: judge it (a/r) or skip it (s)", "warn")
                    fwd = [nxt]
                if state.get("pid"):
                    back.append(state["pid"])
                state["pid"] = fwd.pop()
            state.update(back=back, fwd=fwd)
            return self.view(s, uid, state)

    def reveal(self, uid: int, state: dict):
        state = dict(state, reveal=not state.get("reveal", False))
        with self.ctx.Session() as s:
            return self.view(s, uid, state, "kind and difficulty shown" if state["reveal"] else "blind review")

    def play(self, uid: int, state: dict, index: int) -> str:
        from app.web_clips import render_gap_clip
        pid = state.get("pid")
        with self.ctx.Session() as s:
            row = s.get(PuzzleRow, pid) if pid else None
            if row is None:
                return msg_html("no puzzle shown", "warn")
            p = Puzzle.from_dict(json.loads(row.record_json))
        if not 1 <= index <= len(p.options):
            return msg_html(f"this puzzle has only {len(p.options)} options", "warn")
        label = p.options[index - 1].label
        t0 = time.perf_counter()
        path = render_gap_clip(self.ctx.data_dir, p, label)
        rel = path.relative_to(self.ctx.data_dir).as_posix()
        return (f'<div class="mvp-clip" data-label="{label}"><div>option <b>{label}</b> in the gap '
                f'(context → {label} → context; {time.perf_counter() - t0:.2f} s)</div>'
                f'<video src="{frame_url(rel, thumb=False)}" autoplay loop muted controls playsinline></video></div>')


def build(ctx: WebContext) -> gr.Blocks:
    act = CurateActions(ctx)
    with gr.Blocks(title="MVP Studio · Curate") as demo:
        nav = gr.HTML(elem_id="mvp-nav-bar")
        progress = gr.HTML(elem_id="mvp-progress")
        msg = gr.HTML(elem_id="mvp-msg")
        state = gr.State(_new_state())
        view = gr.HTML(elem_id="mvp-view")
        with gr.Row():
            b_accept = gr.Button("Accept (a)", variant="primary", elem_id="btn-accept")
            b_reject = gr.Button("Reject (r)", variant="stop", elem_id="btn-reject")
            b_skip = gr.Button("Skip (s)", elem_id="btn-skip")
            b_undo = gr.Button("Undo (u)", elem_id="btn-undo")
            b_prev = gr.Button("← Prev", elem_id="btn-prev")
            b_next = gr.Button("Next →", elem_id="btn-next")
            b_reveal = gr.Button("Reveal kind/difficulty (v)", elem_id="btn-reveal")
            b_help = gr.Button("Keys (?)", elem_id="btn-help")
        with gr.Row():
            reason = gr.Radio(list(REASON_CODES), value=DEFAULT_REASON, label="Reason for rejecting a distractor (c cycles)",
                              elem_id="mvp-reason")
            note = gr.Textbox(label="Note on the puzzle verdict (optional)", elem_id="mvp-note", max_lines=2)
        clip = gr.HTML(elem_id="mvp-clip")
        gr.HTML(HELP_HTML)
        with gr.Row(elem_classes=["mvp-hidden"]):   # pressed by static/hotkeys.js
            toggles = [gr.Button(f"t{i}", elem_id=f"btn-toggle-{i}") for i in range(1, MAX_KEYS + 1)]
            plays = [gr.Button(f"p{i}", elem_id=f"btn-play-{i}") for i in range(1, MAX_KEYS + 1)]

        outs = [state, view, msg]

        def progress_fn(request: gr.Request):
            with guard(ctx, request, PAGE) as uid:
                return act.progress(uid)

        def on_load(request: gr.Request):
            with guard(ctx, request, PAGE) as uid:
                deep = request.query_params.get("puzzle") if request is not None else None
                return (nav_html(ctx, request.username, PAGE), *act.load(uid, deep))

        demo.load(on_load, None, [nav, *outs], show_progress="hidden").then(
            progress_fn, None, progress, show_progress="hidden")

        def verdict_fn(v):
            def fn(st, nt, request: gr.Request):
                with guard(ctx, request, PAGE) as uid:
                    return (*act.verdict(uid, st, v, nt), "", "")
            return fn

        for btn, v in ((b_accept, "accept"), (b_reject, "reject"), (b_skip, "skip")):
            btn.click(verdict_fn(v), [state, note], [*outs, note, clip], show_progress="hidden",
                      api_name=f"verdict_{v}", queue=False).then(progress_fn, None, progress, show_progress="hidden")

        def undo_fn(st, request: gr.Request):
            with guard(ctx, request, PAGE) as uid:
                return act.undo(uid, st)
        b_undo.click(undo_fn, [state], outs, show_progress="hidden", api_name="undo", queue=False).then(
            progress_fn, None, progress, show_progress="hidden")

        def move_fn(step):
            def fn(st, request: gr.Request):
                with guard(ctx, request, PAGE) as uid:
                    return act.move(uid, st, step)
            return fn
        b_prev.click(move_fn(-1), [state], outs, show_progress="hidden", api_name="prev", queue=False)
        b_next.click(move_fn(+1), [state], outs, show_progress="hidden", api_name="next", queue=False)

        def reveal_fn(st, request: gr.Request):
            with guard(ctx, request, PAGE) as uid:
                return act.reveal(uid, st)
        b_reveal.click(reveal_fn, [state], outs, show_progress="hidden", api_name="reveal", queue=False)
        b_help.click(None, None, None, js="() => window.mvpToggleHelp && window.mvpToggleHelp()")

        def toggle_fn(i):
            def fn(st, rs, request: gr.Request):
                with guard(ctx, request, PAGE) as uid:
                    return act.toggle(uid, st, i, rs)
            return fn

        def play_fn(i):
            def fn(st, request: gr.Request):
                with guard(ctx, request, PAGE) as uid:
                    return act.play(uid, st, i)
            return fn
        for i, (bt, bp) in enumerate(zip(toggles, plays), start=1):
            bt.click(toggle_fn(i), [state, reason], outs, show_progress="hidden", api_name=f"toggle_{i}", queue=False)
            bp.click(play_fn(i), [state], [clip], show_progress="minimal", api_name=f"play_{i}")
    return demo

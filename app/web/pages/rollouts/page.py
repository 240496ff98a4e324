"""The Rollouts page (researchers and admins): any two model versions (a run's base model or any
checkpoint, of one run or two) side by side on the same puzzle: the puzzle itself (context
filmstrip and gap, the options, the prompt), then each version's G answers with their reasoning,
the chosen frames shown in the gap, every reward term and the training advantage; how often each
distractor fooled the model; zero-variance groups flagged (one click sends the puzzle back to the
curation queue). Below: evaluate a checkpoint as a background job (app/web/pages/rollouts/eval.py)
and the stored evaluations per checkpoint beside the shortcut baselines (app/web/pages/stats/eval.py).

The four panes below the controls (puzzle, left and right answers, run) are filled by
app/web/pages/rollouts/rollouts.js from the page's view API (app/web/pages/rollouts/api.py), not by Gradio events: the
script fetches the default view as soon as it runs, while Gradio is still starting, and a puzzle
or version switch is one small fetch. The controls are Gradio's; each answers with the controls
below it in one event (`.input`, not `.change`, so no cascade) and then hands the chosen versions
and puzzle to the script."""
from __future__ import annotations

from dataclasses import dataclass

import gradio as gr

from app.web.common import WebContext, esc, guard, msg_html, nav_html, page_blocks, sections_in_one
from app.web.pages.rollouts import eval as rollouts_eval, steer as rollouts_steer
from app.web.pages.rollouts import choices as picks
from app.web.pages.rollouts import playground as rollouts_playground, table as rollouts_table
from app.web.pages.stats import eval as stats_eval
from app.web.pages.rollouts.view import group_html, puzzle_html, run_html
from db.runs import rollout_views as rd

PAGE = "rollouts"
NONE = ""


def _default_right(s, choices: list[tuple[str, str]], left: str | None) -> str:
    """The model the left's run started from (its answers, rd.start_source), else the run's newest
    other version, else nothing."""
    keys = [k for _, k in choices]
    start = rd.start_source(s, left, keys)
    if start:
        return start
    src = rd.parse_source(left)
    same = [k for k in keys if src and k != left and rd.parse_source(k)[0] == src[0]]
    return same[0] if same else NONE


@dataclass
class Opening:
    """What the page opens on: the newest version (left), the model its run started from (right,
    NONE if that has no answers), the first puzzle of its first video; with the pickers' choices as
    Gradio updates."""
    choices: list[tuple[str, str]]
    left: str | None
    right: str
    videos: dict            # gr.update of the video picker
    puzzles: dict           # gr.update of the puzzle picker
    puzzle: str | None


def opening(ctx: WebContext) -> Opening:
    """The page's default selection (its load event and the view API's default view)."""
    with ctx.Session() as s:
        choices = picks.sources(s)
        lft = choices[0][1] if choices else None
        rgt = _default_right(s, choices, lft)
    vids, vid = videos_for(ctx, lft)
    pzs, pid = puzzles_for(ctx, lft, vid)
    return Opening(choices, lft, rgt, vids, pzs, pid)


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
    right_html = group_html(rec2, b, f"{pid} · {lb}") if right else (
        f'<div id="ro-right-none" class="mvp-cap">nothing to compare with: no stored answers of a model '
        f'{esc(la)} started from (it is a start model, or that model was not rolled out); choose a version '
        f'in "Compare with"</div>')
    return [puzzle_html(rec, info.get("config") or {}), group_html(rec, a, f"{pid} · {la}"), right_html,
            run_html(info)]


def puzzles_for(ctx: WebContext, left: str | None, vid: str | None):
    if not left or not vid:
        return gr.update(choices=[], value=None), None
    with ctx.Session() as s:
        ps = picks.puzzles(s, left, vid)
    first = ps[0].puzzle_id if ps else None
    choices, label = picks.puzzle_picker(ps, first)
    return gr.update(choices=choices, value=first, label=label), first


def videos_for(ctx: WebContext, left: str | None):
    with ctx.Session() as s:
        vids = picks.videos(s, left) if left else []
    first = vids[0][1] if vids else None
    return gr.update(choices=vids, value=first), first


def right_for(s, choices: list[tuple[str, str]], left: str | None, right: str | None) -> str:
    """The right-hand version once the left one changed: kept while it is a version of the left's
    run, else the model that run started from (`_default_right`). (Keeping another run's version
    showed that run's answers beside the new left whenever both runs had answered the same puzzle.)"""
    src, other = rd.parse_source(left), rd.parse_source(right)
    if right and src and other and other[0] == src[0] and right != left:
        return right
    return _default_right(s, choices, left)


@dataclass
class RolloutsUI:
    """The page's components."""
    nav: gr.HTML
    ckpt: gr.Dropdown          # left model version
    ckpt2: gr.Dropdown         # right model version (or none)
    video: gr.Dropdown
    refresh: gr.Button
    info: gr.HTML
    puzzle: gr.Dropdown
    requeue: gr.Button
    msg: gr.HTML
    puzzle_view: gr.HTML
    left: gr.HTML
    right: gr.HTML

    @property
    def selection(self) -> list:
        """What the view shows: left and right versions, the puzzle (app/web/pages/rollouts/rollouts.js `show`)."""
        return [self.ckpt, self.ckpt2, self.puzzle]


def build_controls() -> RolloutsUI:
    nav = gr.HTML()
    with gr.Row():
        ckpt = gr.Dropdown(label="Model version (left)", choices=[], elem_id="ro-ckpt", scale=3)
        ckpt2 = gr.Dropdown(label="Compare with (right)", choices=[], elem_id="ro-ckpt2", scale=3)
        video = gr.Dropdown(label="Video", choices=[], elem_id="ro-video", scale=2)
        refresh = gr.Button("Refresh", elem_id="ro-refresh", scale=0, size="sm")
    info = gr.HTML('<div id="ro-pane-info" class="mvp-pane"></div>', elem_id="ro-info")   # filled by the script
    puzzle = gr.Dropdown(label=picks.PUZZLE_LABEL, choices=[], elem_id="ro-puzzle")
    with gr.Row():
        requeue = gr.Button("Send this puzzle back to the curation queue", elem_id="ro-requeue")
    msg = gr.HTML(elem_id="ro-msg")
    # panes app/web/pages/rollouts/rollouts.js fills (their Gradio values never change, so Gradio never redraws them)
    puzzle_view = gr.HTML('<div id="ro-pane-puzzle" class="mvp-pane"></div>', elem_id="ro-puzzle-box")
    with gr.Row(elem_classes=["mvp-side"]):
        left = gr.HTML('<div id="ro-pane-left" class="mvp-pane"></div>', elem_id="ro-left")
        right = gr.HTML('<div id="ro-pane-right" class="mvp-pane"></div>', elem_id="ro-right")
    return RolloutsUI(nav, ckpt, ckpt2, video, refresh, info, puzzle, requeue, msg, puzzle_view, left, right)


@dataclass
class RolloutsHandlers:
    """The page's event handlers; each checks the caller's role first (`guard`)."""
    ctx: WebContext

    def load(self, request: gr.Request):
        """[nav, left, right, video, puzzle, message]: the newest version, its run's other one."""
        with guard(self.ctx, request, PAGE):
            o = opening(self.ctx)
            note = "" if o.choices else ("No answers stored yet: evaluate a checkpoint below, or run "
                                         "`mvp rollout --run RUN --checkpoint C --set NAME`.")
            return [nav_html(self.ctx, request.username, PAGE), gr.update(choices=o.choices, value=o.left),
                    gr.update(choices=[("(none)", NONE)] + o.choices, value=o.right), o.videos, o.puzzles,
                    msg_html(note, "warn")]

    def left(self, lft, rgt, request: gr.Request):
        """[right, video, puzzle] for a new left version."""
        with guard(self.ctx, request, PAGE):
            with self.ctx.Session() as s:
                rgt = right_for(s, picks.sources(s), lft, rgt)
            vids, vid = videos_for(self.ctx, lft)
            pzs, _ = puzzles_for(self.ctx, lft, vid)
            return [gr.update(value=rgt), vids, pzs]

    def video(self, lft, vid, request: gr.Request):
        with guard(self.ctx, request, PAGE):
            return puzzles_for(self.ctx, lft, vid)[0]

    def requeue(self, pid, request: gr.Request):
        with guard(self.ctx, request, PAGE) as uid:
            if not pid:
                return msg_html("choose a puzzle first", "warn")
            from db.review import requeue
            with self.ctx.Session() as s:
                requeue(s, uid, pid, reason="zero-variance group in rollouts")
            return msg_html(f"{pid} is back in the curation queue")


# hands the selection to app/web/pages/rollouts/rollouts.js, which fetches and shows the view (no Python runs)
SHOW_JS = "(l, r, p) => { window.mvpRollouts && window.mvpRollouts.show(l, r, p); }"


def wire(demo: gr.Blocks, ui: RolloutsUI, h: RolloutsHandlers):
    """Every control answers with the controls below it in one event (`.input`: no cascade), then the
    script shows the view. The switches skip Gradio's queue (`queue=False`: one plain POST instead of
    a queue join and an event stream; they are short reads). Returns the page load's event, for the
    rest of the page to load after it (not beside it: on 2 cores they slowed the first view)."""
    load_outputs = [ui.nav, ui.ckpt, ui.ckpt2, ui.video, ui.puzzle, ui.msg]
    fast = {"queue": False, "show_progress": "hidden"}
    loaded = demo.load(h.load, None, load_outputs, **fast)
    loaded.then(None, ui.selection, None, js=SHOW_JS)
    ui.refresh.click(h.load, None, load_outputs, api_name="refresh").then(None, ui.selection, None, js=SHOW_JS)
    ui.ckpt.input(h.left, [ui.ckpt, ui.ckpt2], [ui.ckpt2, ui.video, ui.puzzle], api_name="run_videos",
                  **fast).then(None, ui.selection, None, js=SHOW_JS)
    ui.video.input(h.video, [ui.ckpt, ui.video], [ui.puzzle], api_name="video_puzzles",
                   **fast).then(None, ui.selection, None, js=SHOW_JS)
    ui.puzzle.input(None, ui.selection, None, js=SHOW_JS)
    ui.ckpt2.input(None, ui.selection, None, js=SHOW_JS)
    ui.requeue.click(h.requeue, [ui.puzzle], [ui.msg], api_name="requeue")
    return loaded


def build(ctx: WebContext) -> gr.Blocks:
    db_url = ctx.Session.kw["bind"].url.render_as_string(hide_password=False)
    with page_blocks("Rollouts") as demo:
        ui = build_controls()
        table = rollouts_table.build_table()     # every puzzle's answers; a row opens it in the view above
        playground = rollouts_playground.build_playground()
        # steered vs unsteered answer of the left version (docs/steer.md); `ckpt` is a source key,
        # which rollout_views.record_seen / run_info take like a run id
        steer_load = rollouts_steer.build_panel(ctx, ui.ckpt, ui.puzzle, db_url)
        panel = rollouts_eval.build_eval_panel(ctx, db_url)
        eval_outputs, eval_fill = stats_eval.build_eval_section(ctx, PAGE)
        loaded = wire(demo, ui, RolloutsHandlers(ctx))
        rollouts_table.wire_table(table, rollouts_table.TableHandlers(ctx), ui.ckpt, ui.video, ui.puzzle,
                                  ui.selection, loaded, ui.refresh)
        rollouts_playground.wire_playground(playground, ctx, ui.ckpt, ui.puzzle)
        # the panels below the view in one answer after the view's: their pickers are filled there, so no
        # change event follows it (docs/web.md, "Pickers a load fills")
        loaded.then(sections_in_one((panel.load, panel.load_outputs), (eval_fill, eval_outputs), steer_load), None,
                    [*panel.load_outputs, *eval_outputs, *steer_load[1]], show_progress="hidden")
        ui.refresh.click(eval_fill, None, eval_outputs)

        def tick(kind, request: gr.Request):
            """The jobs' progress; on the last tick (no job left running) the stored evaluations
            too, so a finished eval appears below without a reload."""
            out = panel.tick(kind, request)
            ended = not getattr(out[-1], "active", True)
            return [*out, *(eval_fill(request) if ended else [gr.skip()] * len(eval_outputs))]
        panel.timer.tick(tick, panel.tick_inputs, [*panel.tick_outputs, *eval_outputs], show_progress="hidden")
    return demo

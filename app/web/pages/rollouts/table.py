"""The answers table on Rollouts: the left model version's answers across ALL its puzzles, one row per
puzzle (or per answer), every reward term, exact, advantage, length, video, distractor kinds and the
start model's result on the same puzzle; sorted, filtered and paged on the server, grouped by video
or distractor kind with 95% intervals that resample videos (docs/web.md, "Rollouts"). Clicking a
row opens that puzzle in the view above. The rows come from db/runs/answers_table.py (DuckDB),
a page at a time: the browser never holds the whole run."""
from __future__ import annotations

from dataclasses import dataclass

import gradio as gr
from pydantic import ValidationError

from app.web.common import WebContext, form_number, guard, msg_html, on_latest, whole_number
from app.web.pages.rollouts import choices as picks
from db.runs import answers_table as at
from db.runs import rollout_views as rd
from mvp_core.errors import UserError

PAGE = "rollouts"
PAGE_ROWS = 25
ALL = ""
RESULTS = [("any", "any"), ("right (exact)", "right"), ("wrong", "wrong")]
GROUPS = [("no groups", ""), ("video", "video"), ("distractor kind", "kind")]
# (column key, header) of the rows shown, per row level
PUZZLE_COLUMNS = [("puzzle", "puzzle"), ("video", "video"), ("answers", "G"), ("format", "format"),
                  ("selection", "selection"), ("order", "order"), ("exact", "exact"), ("total", "total"),
                  ("std", "reward std"), ("length", "length"), ("kinds", "distractor kinds"),
                  ("start_exact", "start model exact")]
ANSWER_COLUMNS = [("puzzle", "puzzle"), ("video", "video"), ("sample", "sample"), ("chosen", "chosen"),
                  ("format", "format"), ("selection", "selection"), ("order", "order"), ("exact", "exact"),
                  ("total", "total"), ("advantage", "advantage"), ("length", "length"),
                  ("kinds", "distractor kinds"), ("start_exact", "start model exact")]
GROUP_COLUMNS = ["group", "videos", "puzzles", "answers", "exact [95% CI]", "total [95% CI]", "format",
                 "selection", "order", "length", "start model exact"]


BUILDING = ('<span class="mvp-muted" id="ro-t-building">building the answers table: the first use since the '
            'server started reads every stored answer once…</span>')


def _cell(v):
    return round(v, 3) if isinstance(v, float) else ("" if v is None else v)


def _sorts(level: str) -> list[tuple[str, str]]:
    cols = dict(PUZZLE_COLUMNS if level == "puzzle" else ANSWER_COLUMNS)
    keys = at.PUZZLE_SORTS if level == "puzzle" else at.ANSWER_SORTS
    return [(cols.get(k, k), k) for k in keys]


def _frame(headers: list[str], rows: list[list]) -> dict:
    return gr.update(value={"headers": headers, "data": rows or [[""] * len(headers)]})


def _group_rows(groups: list[dict]) -> list[list]:
    def ci(g, k):
        return f"{g[k]:.3f} [{g[k + '_lo']:.3f}, {g[k + '_hi']:.3f}]"
    return [[g["group"], g["videos"], g["puzzles"], g["answers"], ci(g, "exact"), ci(g, "total"),
             *(_cell(g[k]) for k in ("format", "selection", "order", "length", "start_exact"))] for g in groups]


@dataclass
class TableUI:
    level: gr.Radio
    sort: gr.Dropdown
    descending: gr.Checkbox
    video: gr.Dropdown
    kind: gr.Dropdown
    result: gr.Radio
    search: gr.Textbox
    group_by: gr.Radio
    prev: gr.Button
    next: gr.Button
    page_no: gr.Number
    status: gr.HTML
    rows: gr.Dataframe
    groups: gr.Dataframe
    msg: gr.HTML

    @property
    def query_inputs(self) -> list:
        return [self.level, self.sort, self.descending, self.video, self.kind, self.result, self.search,
                self.group_by, self.page_no]

    @property
    def outputs(self) -> list:
        return [self.sort, self.video, self.kind, self.page_no, self.status, self.rows, self.groups, self.msg]


def build_table() -> TableUI:
    with gr.Accordion("All puzzles: the answers table", open=True, elem_id="ro-table"):
        with gr.Row():
            level = gr.Radio([("per puzzle", "puzzle"), ("per answer", "answer")], value="puzzle",
                             label="Rows", elem_id="ro-t-level")
            sort = gr.Dropdown(_sorts("puzzle"), value="puzzle", label="Sort by", elem_id="ro-t-sort")
            descending = gr.Checkbox(False, label="largest first", elem_id="ro-t-desc")
            group_by = gr.Radio(GROUPS, value="", label="Group by", elem_id="ro-t-group")
        with gr.Row():
            video = gr.Dropdown([("all videos", ALL)], value=ALL, label="Video", elem_id="ro-t-video")
            kind = gr.Dropdown([("any kind", ALL)], value=ALL, label="Distractor kind", elem_id="ro-t-kind")
            result = gr.Radio(RESULTS, value="any", label="Result", elem_id="ro-t-result")
            search = gr.Textbox(label="Search puzzle id or video (Enter)", max_length=200, elem_id="ro-t-search")
        groups = gr.Dataframe(headers=GROUP_COLUMNS, interactive=False, elem_id="ro-t-groups", visible=False,
                              label="Groups: means with 95% intervals resampling videos", wrap=True)
        with gr.Row():
            prev = gr.Button("Previous", size="sm", elem_id="ro-t-prev", scale=0)
            page_no = whole_number(1, "Page", minimum=1, elem_id="ro-t-page", scale=0)
            nxt = gr.Button("Next", size="sm", elem_id="ro-t-next", scale=0)
            status = gr.HTML(elem_id="ro-t-status")
        rows = gr.Dataframe(headers=[h for _, h in PUZZLE_COLUMNS], interactive=False, elem_id="ro-t-rows",
                            label="Click a row to open its puzzle above", wrap=True, max_height=640)
        msg = gr.HTML(elem_id="ro-t-msg")
    return TableUI(level, sort, descending, video, kind, result, search, group_by, prev, nxt, page_no, status, rows,
                   groups, msg)


@dataclass
class TableHandlers:
    ctx: WebContext

    def _engine(self):
        return self.ctx.Session.kw["bind"]

    def fill(self, left, level, sort, descending, video, kind, result, search, group_by, page_no,
             request: gr.Request):
        """The page of rows (and the groups) for the left version and the controls' values; an
        invalid value is one line in the table's message box and the table stays as it was."""
        with guard(self.ctx, request, PAGE):
            if not left:
                return [gr.skip()] * 7 + [msg_html("no model version with answers yet", "warn")]
            level = level if level in at.ROW_LEVELS else "puzzle"
            if sort not in dict((k, k) for _, k in _sorts(level)):
                sort = "puzzle"        # the level changed: its own first column
            try:
                page_no = max(1, int(form_number("page", page_no, whole=True, default=1)))
                q = at.AnswersQuery(level=level, sort=sort, descending=bool(descending), video=video or None,
                                    kind=kind or None, result=result or "any", search=(search or "").strip(),
                                    offset=(page_no - 1) * PAGE_ROWS, limit=PAGE_ROWS)
            except (ValidationError, ValueError, OverflowError) as e:
                raise UserError(f"answers table: {_one_line(e)}") from None
            with self.ctx.Session() as s:
                start = rd.start_source(s, left, [k for _, k in picks.sources(s)])
                videos = picks.videos(s, left)
                start_note = f" · start model: {rd.source_label(s, start)}" if start else " · no start-model answers"
            rows, n = at.page(self._engine(), left, q, start)
            last = max(1, -(-n // PAGE_ROWS))
            if page_no > last and n:
                return self.fill(left, level, sort, descending, video, kind, result, search, group_by, last,
                                 request)
            cols = PUZZLE_COLUMNS if level == "puzzle" else ANSWER_COLUMNS
            data = [[_cell(r.get(k)) for k, _ in cols] for r in rows]
            grp = at.groups(self._engine(), left, group_by, q, start) if group_by in at.GROUP_BY else []
            first = q.offset + 1 if rows else 0
            return [gr.update(choices=_sorts(level), value=sort),
                    gr.update(choices=[("all videos", ALL)] + videos,
                              value=video if video in {v for _, v in videos} else ALL),
                    gr.update(choices=[("any kind", ALL)] + [(k, k) for k in at.kinds(self._engine(), left)]),
                    page_no,
                    f'<span class="mvp-muted">{level} rows {first}-{q.offset + len(rows)} of {n} · page {page_no} '
                    f"of {last}{start_note}</span>",
                    _frame([h for _, h in cols], data),
                    gr.update(value={"headers": GROUP_COLUMNS, "data": _group_rows(grp) or [[""] * len(GROUP_COLUMNS)]},
                              visible=bool(group_by)),
                    ""]

    def fill_stream(self, left, level, sort, descending, video, kind, result, search, group_by, page_no,
                    request: gr.Request):
        """`fill`, first showing that the table is being built when this server has not read the
        answers yet (the first use since it started: every answer is pulled, seconds at 10^5), so
        the table says so at once instead of staying blank."""
        if left and not at.ready(self._engine()):
            yield [gr.skip()] * 4 + [BUILDING] + [gr.skip()] * 3
        yield self.fill(left, level, sort, descending, video, kind, result, search, group_by, page_no, request)

    def first_page(self, left, level, sort, descending, video, kind, result, search, group_by, request: gr.Request):
        """`fill` from page 1: a filter, sort or level changed (the page number shown is not read)."""
        return self.fill(left, level, sort, descending, video, kind, result, search, group_by, 1, request)

    def _step(self, delta: int, args: tuple, request: gr.Request):
        """`fill` of the page before (delta -1) or after (+1) the one shown; a page number that is not
        whole is one line."""
        *query, page_no = args
        with guard(self.ctx, request, PAGE):
            page_no = max(1, int(form_number("page", page_no, whole=True, default=1)) + delta)
        return self.fill(*query, page_no, request)

    def previous(self, left, level, sort, descending, video, kind, result, search, group_by, page_no,
                 request: gr.Request):
        return self._step(-1, (left, level, sort, descending, video, kind, result, search, group_by, page_no),
                          request)

    def next(self, left, level, sort, descending, video, kind, result, search, group_by, page_no,
             request: gr.Request):
        return self._step(1, (left, level, sort, descending, video, kind, result, search, group_by, page_no),
                          request)

    def open_row(self, left, evt: gr.SelectData, request: gr.Request):
        """[video picker, puzzle picker] of the clicked row's puzzle (the view above then shows it)."""
        with guard(self.ctx, request, PAGE):
            row = evt.row_value or []
            pid = str(row[0]) if row else ""
            from db.models import Puzzle
            with self.ctx.Session() as s:
                p = s.get(Puzzle, pid) if pid else None
                if p is None or not left:
                    return gr.skip(), gr.skip()
                vid = p.video_id
                vids = picks.videos(s, left)
                summaries = picks.puzzles(s, left, vid)
            choices, label = picks.puzzle_picker(summaries, pid)
            return gr.update(choices=vids, value=vid), gr.update(choices=choices, value=pid, label=label)


def _one_line(e: Exception) -> str:
    if isinstance(e, ValidationError):
        err = e.errors()[0]
        where = ".".join(str(x) for x in err.get("loc", ())) or "value"
        return f"{where}: {err.get('msg', 'invalid')}".replace("Value error, ", "")
    return str(e).splitlines()[0]


# after a row opens a puzzle: show it (app/web/pages/rollouts/rollouts.js) and bring the view into sight
OPEN_JS = ("(l, r, p) => { window.mvpRollouts && window.mvpRollouts.show(l, r, p); "
           "document.getElementById('ro-puzzle-box')?.scrollIntoView({block: 'start'}); }")


def wire_table(t: TableUI, h: TableHandlers, left: gr.Dropdown, video: gr.Dropdown, puzzle: gr.Dropdown,
               selection: list, loaded, refresh: gr.Button) -> None:
    """A filter, sort or level change (and a new left version) fills page 1; the page buttons the page
    before or after; the page's load and Refresh fill the page shown. Each is one queued event reading
    the controls as they are when it runs."""
    inputs = [left, *t.query_inputs]
    # one queue for every fill, one at a time: answers come back in the order they were asked; the
    # store's DuckDB copy answers one query at a time anyway. Every control's change is one event
    # (`on_latest`): two quick changes (sort, then "largest first") end on the rows of both.
    fast = {"show_progress": "hidden", "concurrency_id": "rollouts-table", "concurrency_limit": 1}
    changes = [c.input for c in (t.level, t.sort, t.descending, t.video, t.kind, t.result, t.group_by, left)]
    on_latest([*changes, t.search.submit], h.first_page, inputs[:-1], t.outputs, **fast)     # all but the page
    t.page_no.submit(h.fill, inputs, t.outputs, **fast)
    # a click while the last one runs is run after it, from the page it shows (two clicks: two pages)
    on_latest([t.prev.click], h.previous, inputs, t.outputs, **fast)
    on_latest([t.next.click], h.next, inputs, t.outputs, **fast)
    loaded.then(h.fill_stream, inputs, t.outputs, **fast)
    refresh.click(h.fill, inputs, t.outputs, **fast)
    t.rows.select(h.open_row, [left], [video, puzzle], show_progress="hidden").then(None, selection, None, js=OPEN_JS)

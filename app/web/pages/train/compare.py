"""Two runs' configs side by side on the Train page, every setting in one row, the rows that differ
marked (and, when asked, the only ones shown). Nested settings are flattened to dotted keys."""
from __future__ import annotations

from dataclasses import dataclass

import gradio as gr

from app.web.common import WebContext, esc, guard, on_latest

PAGE = "train"
MISSING = "(not set)"


def flatten(cfg: dict, prefix: str = "") -> dict[str, object]:
    out: dict[str, object] = {}
    for k, v in (cfg or {}).items():
        key = f"{prefix}{k}"
        if isinstance(v, dict) and v:
            out.update(flatten(v, key + "."))
        else:
            out[key] = v
    return out


def diff_rows(a: dict, b: dict) -> list[tuple[str, object, object, bool]]:
    """(key, value in a, value in b, differs) for every key of either, sorted by key."""
    fa, fb = flatten(a), flatten(b)
    return [(k, fa.get(k, MISSING), fb.get(k, MISSING), fa.get(k, MISSING) != fb.get(k, MISSING))
            for k in sorted(set(fa) | set(fb))]


def diff_html(a_id: str | None, b_id: str | None, a: dict, b: dict, only_diff: bool) -> str:
    if not a_id or not b_id:
        return '<p id="train-cfg-diff" data-differ="0">Pick two runs to compare their configs.</p>'
    rows = diff_rows(a, b)
    n = sum(1 for *_, d in rows if d)
    shown = [r for r in rows if r[3] or not only_diff]
    body = "".join(
        f'<tr class="{"mvp-diff" if d else "mvp-same"}" data-key="{esc(k)}"><td><code>{esc(k)}</code></td>'
        f"<td>{esc(va)}</td><td>{esc(vb)}</td><td>{'differs' if d else ''}</td></tr>" for k, va, vb, d in shown)
    return (f'<p class="mvp-muted">{n} of {len(rows)} settings differ</p>'
            f'<table id="train-cfg-diff" class="mvp-table" data-differ="{n}"><tr><th>setting</th>'
            f"<th>{esc(a_id)}</th><th>{esc(b_id)}</th><th></th></tr>{body}</table>")


@dataclass
class CompareUI:
    a: gr.Dropdown
    b: gr.Dropdown
    only_diff: gr.Checkbox
    table: gr.HTML


def build_compare() -> CompareUI:
    gr.Markdown("### Compare two runs' configs")
    with gr.Row():
        a = gr.Dropdown(label="Run A", choices=[], elem_id="train-cfg-a")
        b = gr.Dropdown(label="Run B", choices=[], elem_id="train-cfg-b")
        only_diff = gr.Checkbox(False, label="only the settings that differ", elem_id="train-cfg-only")
    return CompareUI(a, b, only_diff, gr.HTML(elem_id="train-cfg-box"))


def wire_compare(ui: CompareUI, ctx: WebContext, loaded: gr.events.Dependency) -> None:
    def configs(*ids) -> list[dict]:
        from db.models.runs import Run
        with ctx.Session() as s:
            return [((s.get(Run, i).config or {}) if i and s.get(Run, i) else {}) for i in ids]

    def fill(request: gr.Request):
        with guard(ctx, request, PAGE):
            from db.runs.index import TRAIN_KINDS, list_runs
            with ctx.Session() as s:
                ids = [r["id"] for r in list_runs(s, TRAIN_KINDS)]
            a, b = (ids[0], ids[1]) if len(ids) > 1 else (None, None)
            return [gr.update(choices=ids, value=a), gr.update(choices=ids, value=b),
                    diff_html(a, b, *configs(a, b), False)]

    def show(a, b, only, request: gr.Request):
        with guard(ctx, request, PAGE):
            return diff_html(a, b, *configs(a, b), bool(only))

    loaded.then(fill, None, [ui.a, ui.b, ui.table], show_progress="hidden")
    on_latest([ui.a.input, ui.b.input, ui.only_diff.input], show, [ui.a, ui.b, ui.only_diff], [ui.table])

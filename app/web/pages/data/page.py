"""The Data page (researchers and admins), mounted at /datasets (/data/... serves frames): videos in,
curated sets out. Add a server-side folder of videos (inside the allowed roots an admin sets),
synthesize puzzles from every added folder as a background job with a progress bar and its summary,
run the shortcut audit (kept per puzzle), freeze the accepted puzzles into a set split by video, list
the sets with their split counts, export one as a zip download (jsonl, Hugging Face datasets,
Video-R1 JSON), and browse every puzzle in the gallery (app/web/pages/gallery/gallery.js).

The work is in app/web/pages/data/ops.py; this module is the layout; the download route is api.py."""
from __future__ import annotations

from types import SimpleNamespace

import gradio as gr

from app.web.common import WebContext, esc, form_number, guard, msg_html, nav_html, page_blocks, whole_number
from app.web.pages.data import ops
from mvp_core.errors import UserError
from mvp_core.export.formats import FORMATS

PAGE = "datasets"
POLL_S = 1.0


def _synth_inputs() -> list:
    d = ops.SynthForm()
    fields = ops.SynthForm.model_fields
    with gr.Row():
        out = [whole_number(d.per_video, fields["per_video"].description, elem_id="data-per-video"),
               whole_number(d.n, "N: " + fields["n"].description, elem_id="data-n"),
               whole_number(d.m, "m: " + fields["m"].description, elem_id="data-m"),
               whole_number(d.l, "l: " + fields["l"].description, elem_id="data-l"),
               gr.Number(d.fps, label=fields["fps"].description, elem_id="data-fps"),
               whole_number(d.seed, "seed", elem_id="data-seed"),
               whole_number(d.workers, fields["workers"].description, elem_id="data-workers")]
    with gr.Row():
        out += [gr.Checkbox(d.adapt, label="adapt: " + fields["adapt"].description, elem_id="data-adapt"),
                gr.Checkbox(d.more, label=fields["more"].description, elem_id="data-more")]
    return out


def build(ctx: WebContext) -> gr.Blocks:
    with page_blocks("Data") as demo:
        ui = _layout()
        refresh_all, outs_all = _refresher(ctx, ui)

        def on_load(request: gr.Request):
            with guard(ctx, request, PAGE):
                return (nav_html(ctx, request.username, PAGE), *refresh_all())
        demo.load(on_load, None, [ui.nav, *outs_all])
        _wire_videos(ctx, ui)
        _wire_synth(ctx, ui, refresh_all, outs_all)
        _wire_sets(ctx, ui)
    return demo


def _layout() -> SimpleNamespace:
    """The page's components, top to bottom: videos, synthesis, audit, freeze, export, the puzzles'
    gallery."""
    ui = SimpleNamespace()
    ui.nav = gr.HTML()
    ui.msg = gr.HTML(elem_id="data-msg")
    gr.Markdown("## Videos")
    ui.roots = gr.HTML(elem_id="data-roots")
    with gr.Row():
        ui.folder = gr.Textbox(label="Folder of videos on the server (absolute path)", elem_id="data-folder", scale=4)
        ui.b_add = gr.Button("Add folder", variant="primary", elem_id="data-add", scale=1)
    ui.files = gr.HTML(elem_id="data-files-box")
    gr.Markdown("## Synthesize")
    ui.synth_in = _synth_inputs()
    ui.b_synth = gr.Button("Synthesize puzzles from the added folders", variant="primary", elem_id="data-synth")
    ui.status = gr.HTML(elem_id="data-synth-status")
    ui.timer = gr.Timer(POLL_S, active=False)
    gr.Markdown("## Shortcut audit")
    ui.b_audit = gr.Button("Run the shortcut audit", elem_id="data-audit")
    ui.audit = gr.HTML(elem_id="data-audit-box")
    gr.Markdown("## Freeze a set (accepted puzzles; splits by video: no video in two splits)")
    with gr.Row():
        ui.set_name = gr.Textbox(label="Set name", elem_id="data-set-name")
        ui.min_d = whole_number(2, "Least distractors left", elem_id="data-min-d")
        ui.fr = [gr.Number(v, label=f"{k} share", elem_id=f"data-split-{k}") for k, v in
                 (("train", 0.8), ("val", 0.1), ("test", 0.1))]
        ui.b_freeze = gr.Button("Freeze", variant="primary", elem_id="data-freeze")
    ui.sets = gr.HTML(elem_id="data-sets-box")
    gr.Markdown("## Export a set")
    with gr.Row():
        ui.exp_set = gr.Dropdown([], label="Set", elem_id="data-export-set", allow_custom_value=False)
        ui.exp_fmt = gr.Radio(list(FORMATS), value="jsonl", label="Format", elem_id="data-export-format")
        ui.b_export = gr.Button("Export", elem_id="data-export")
    ui.link = gr.HTML(elem_id="data-export-link")
    gr.Markdown("## Puzzles")
    # the gallery (app/web/pages/gallery/gallery.js; its query after #gallery in the address): a
    # researcher reads it (no bulk bar: the gallery's API says what the role may do)
    gr.HTML('<div id="mvp-gallery" data-gallery-api="/gallery/api/" data-gallery-url="hash"></div>',
            elem_id="mvp-gallery-box")
    return ui


def _refresher(ctx: WebContext, ui: SimpleNamespace):
    """(refresh_all, its outputs): everything the page shows from the store, re-read."""
    def refresh_all():
        names = ops.set_names(ctx)
        st = ops.synth_status(ctx)
        return (esc_roots(ctx), files_html(ctx), st["html"], gr.Timer(active=st["state"] == "running"),
                sets_html(ctx), gr.Dropdown(choices=names, value=names[-1] if names else None))
    return refresh_all, [ui.roots, ui.files, ui.status, ui.timer, ui.sets, ui.exp_set]


def _wire_videos(ctx: WebContext, ui: SimpleNamespace) -> None:
    def on_add(path, request: gr.Request):
        with guard(ctx, request, PAGE):
            return (msg_html(ops.add_folder(ctx, path)), files_html(ctx))
    ui.b_add.click(on_add, [ui.folder], [ui.msg, ui.files], api_name="add_folder")


def _wire_synth(ctx: WebContext, ui: SimpleNamespace, refresh_all, outs_all: list) -> None:
    """The synthesis job (started, then polled while it runs) and the shortcut audit."""
    def on_synth(per_video, n, m, l, fps, seed, workers, adapt, more, request: gr.Request):  # noqa: E741
        with guard(ctx, request, PAGE):
            form = _form({"per_video": per_video, "n": n, "m": m, "l": l, "fps": fps, "seed": seed,
                          "workers": workers, "adapt": bool(adapt), "more": bool(more)})
            text = ops.start_synth(ctx, request.username, form)
            return msg_html(text), ops.synth_status(ctx)["html"], gr.Timer(active=True)
    ui.b_synth.click(on_synth, ui.synth_in, [ui.msg, ui.status, ui.timer], api_name="synth")

    def on_tick(request: gr.Request):
        with guard(ctx, request, PAGE):
            return refresh_all()
    ui.timer.tick(on_tick, None, outs_all, show_progress="hidden")

    def on_audit(request: gr.Request):
        with guard(ctx, request, PAGE):
            return ops.table_html("data-audit-table", ops.AUDIT_HEADERS, ops.audit_rows(ctx))
    ui.b_audit.click(on_audit, None, [ui.audit], api_name="audit").then(
        None, None, None, js="() => { window.mvpGallery && window.mvpGallery.reload(); }")   # the cards' audit flags


def _wire_sets(ctx: WebContext, ui: SimpleNamespace) -> None:
    """Freeze a set, export one as a download."""
    def on_freeze(name, md, tr, va, te, request: gr.Request):
        with guard(ctx, request, PAGE) as uid:
            text = ops.freeze(ctx, uid, name, md, tr, va, te)
            names = ops.set_names(ctx)
            return msg_html(text), sets_html(ctx), gr.Dropdown(choices=names, value=names[-1])
    ui.b_freeze.click(on_freeze, [ui.set_name, ui.min_d, *ui.fr], [ui.msg, ui.sets, ui.exp_set], api_name="freeze")

    def on_export(name, fmt, request: gr.Request):
        with guard(ctx, request, PAGE):
            path = ops.export_zip(ctx, name, fmt)
            href = f"/{PAGE}/export/{path.name}"
            return (msg_html(f"exported {name} as {fmt}"),
                    f'<a id="data-download" class="mvp-btn" href="{esc(href)}" download="{esc(path.name)}">'
                    f'Download {esc(path.name)}</a>')
    ui.b_export.click(on_export, [ui.exp_set, ui.exp_fmt], [ui.msg, ui.link], api_name="export")


def files_html(ctx: WebContext) -> str:
    return ops.table_html("data-files", ["file", "folder", "will be skipped because"], ops.folder_rows(ctx),
                          "no folder added yet")


def sets_html(ctx: WebContext) -> str:
    return ops.table_html("data-sets", ops.SET_HEADERS, ops.set_rows(ctx), "no curated set yet")


def esc_roots(ctx: WebContext) -> str:
    return f'<div class="mvp-data">Allowed folders: <code id="data-allowed">{esc(ops.roots_text(ctx))}</code></div>'


def _form(vals: dict) -> ops.SynthForm:
    from pydantic import ValidationError
    whole = {k for k, f in ops.SynthForm.model_fields.items() if f.annotation is int}
    vals = {k: form_number(k, v, whole=True) if k in whole and v is not None else v for k, v in vals.items()}
    try:
        return ops.SynthForm(**{k: v for k, v in vals.items() if v is not None})
    except ValidationError as e:
        err = e.errors()[0]
        raise UserError(f"{err['loc'][0]}: {err['msg']}") from None

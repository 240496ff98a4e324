"""The gallery page: every puzzle as a card (a thumbnail strip of its context with the gap marked,
status, verdict counts, agreement, tags, comments, a run's result), filtered, sorted and searched in
a side panel, a page at a time; views saved by name and opened by their URL; select one, a range
(shift) or all that match, then accept, reject with a reason, send back to the queue or tag in bulk,
and undo the batch (docs/web.md, "Gallery").

Curators and admins act; researchers read. Every list is one query of `db.review.gallery` (SQL on
both engines), every write one call of `db.review.bulk` / `db.review.tags`, which check the role
themselves. Like the curate page, the cards are HTML from templates that
app/web/pages/gallery/gallery.js swaps in from the JSON API (app/web/pages/gallery/api.py)."""
from __future__ import annotations

import gradio as gr
from sqlalchemy import select

from app.web.common import WebContext, guard, nav_html, page_blocks
from app.web.templating import render
from db.models.curation import STATUSES, User
from db.review.gallery import SORTS

PAGE = "gallery"


def grid_html(rows: list[dict], offset: int) -> str:
    return render("gallery_grid.html", rows=rows, offset=offset)


def panel_html(ctx: WebContext) -> str:
    """The side panel with the store's own choices: videos by file name, distractor kinds, tags,
    curators (and admins), runs with stored answers; and the audit flags (any, none, not audited,
    one shortcut solver)."""
    from db.models.runs import Rollout, Run
    from db.review.browse import option_kinds, video_names
    from db.puzzles.audit_results import FLAGS
    from db.review.tags import all_tags
    from mvp_core.synth.audit import SHORTCUTS
    with ctx.Session() as s:
        videos = sorted(video_names(s).items(), key=lambda kv: kv[1])
        kinds = option_kinds(s)
        curators = list(s.scalars(select(User.name).where(User.role.in_(("curator", "admin")))
                                  .order_by(User.name)))
        runs = [(i, n or i) for i, n in s.execute(
            select(Run.id, Run.name).where(select(Rollout.id).where(Rollout.run_id == Run.id).exists())
            .order_by(Run.created_at.desc()))]
        tags = all_tags(s)
    return render("gallery_panel.html", sorts=list(SORTS), statuses=[(x, x) for x in STATUSES],
                  videos=videos, kinds=[(k, k) for k in kinds], tags=[(t, t) for t in tags],
                  curators=curators, runs=runs,
                  audit_flags=[*FLAGS.items(), *((n, f"solved by {n}") for n in SHORTCUTS)])


def build(ctx: WebContext) -> gr.Blocks:
    """Gradio draws the navigation; the panel, grid, bulk bar and pager are plain <div>s the script
    fills from the JSON API, so a filter change is one fetch, not a Gradio round trip."""
    with page_blocks("Gallery") as demo:
        nav = gr.HTML(elem_id="mvp-nav-bar")
        gr.HTML('<div id="mvp-gallery" data-gallery-api="/gallery/api/"></div>', elem_id="mvp-gallery-box")

        def on_load(request: gr.Request):
            with guard(ctx, request, PAGE):
                return nav_html(ctx, request.username, PAGE)
        demo.load(on_load, None, [nav], show_progress="hidden")
        demo.load(None, None, None, js="() => { window.mvpGallery && window.mvpGallery.start(); }")
    return demo

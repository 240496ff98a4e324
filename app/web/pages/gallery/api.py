"""The gallery page's JSON API: POST /gallery/api/<action>, called by app/web/pages/gallery/gallery.js
(the request checks are app/web/json_api.py's). Reads go through `db.review.gallery`; writes through
`db.review.bulk` and `db.review.tags`, which refuse a role that may not with one line (400)."""
from __future__ import annotations

from fastapi import FastAPI

from app.web.common import WebContext
from app.web.json_api import add_action_routes
from app.web.pages.gallery.page import PAGE, grid_html, panel_html
from app.web.templating import render
from db.review import bulk, gallery, tags
from mvp_core.errors import UserError

PREFIX = "/gallery/api"
ACTIONS = ("init", "page", "view", "save_view", "delete_view", "bulk", "undo", "tag", "untag", "comment", "notes")


def _text(body: dict, key: str, limit: int = 2000) -> str:
    v = body.get(key)
    if v is None:
        return ""
    if not isinstance(v, str) or len(v) > limit:
        raise UserError(f"bad request: {key} must be text of at most {limit} characters")
    return v


def _pid(body: dict) -> str:
    pid = body.get("puzzle_id")
    if not isinstance(pid, str) or not 0 < len(pid) <= 64:
        raise UserError("bad request: puzzle_id must be a puzzle id")
    return pid


def _can(role: str | None) -> dict:
    """What the page offers this role (the store checks again on every write)."""
    from db.review.access import BULK_JUDGE_ROLES
    from db.review.verdicts import REQUEUE_ROLES
    return {"judge": role in BULK_JUDGE_ROLES, "requeue": role in REQUEUE_ROLES and role in tags.TAG_ROLES,
            "tag": role in tags.TAG_ROLES}


class GalleryActions:
    def __init__(self, ctx: WebContext):
        self.ctx = ctx

    def __call__(self, uid: int, name: str, action: str, body: dict) -> dict:
        return getattr(self, action)(uid, name, body)

    def _views(self, s, uid: int) -> list[dict]:
        return gallery.list_views(s, uid)

    def init(self, uid, name, body):
        with self.ctx.Session() as s:
            views = self._views(s, uid)
        return {"panel": panel_html(self.ctx), "views": views, "can": _can(self.ctx.auth.role_of(name))}

    def page(self, uid, name, body):
        q = gallery.parse_query(body.get("query"))
        with self.ctx.Session() as s:
            out = gallery.gallery_page(s, q)
        return {"grid": grid_html(out["rows"], q.offset), "ids": [r["puzzle_id"] for r in out["rows"]],
                "total": out["total"], "by_status": out["by_status"], "query": q.model_dump()}

    def view(self, uid, name, body):
        with self.ctx.Session() as s:
            return {"query": gallery.get_view(s, uid, _text(body, "name", 80)).model_dump()}

    def save_view(self, uid, name, body):
        q = gallery.parse_query(body.get("query"))
        with self.ctx.Session() as s:
            saved = gallery.save_view(s, uid, _text(body, "name", 80), q)
            return {"views": self._views(s, uid), "msg": f"saved view {saved['name']!r}"}

    def delete_view(self, uid, name, body):
        with self.ctx.Session() as s:
            gallery.delete_view(s, uid, _text(body, "name", 80))
            return {"views": self._views(s, uid), "msg": "view deleted"}

    def bulk(self, uid, name, body):
        """On `ids`, or on every puzzle the `query` matches when `all` is true."""
        with self.ctx.Session() as s:
            if body.get("all") is True:
                ids = gallery.matching_ids(s, gallery.parse_query(body.get("query")))
            else:
                ids = body.get("ids")
            res = bulk.bulk_action(s, uid, ids, _text(body, "action", 16), reason=_text(body, "reason"),
                                   tag=_text(body, "tag", 80))
        what = {"accept": "accepted", "reject": "rejected", "requeue": "sent back to the queue",
                "tag": "tagged"}[res["action"]]
        return {**res, "msg": f"{what}: {res['n_changed']} of {res['n_selected']} puzzles "
                              f"(the others already were)" if res["n_changed"] < res["n_selected"]
                else f"{what}: {res['n_changed']} puzzles"}

    def undo(self, uid, name, body):
        batch = body.get("batch_id")
        with self.ctx.Session() as s:
            res = bulk.undo_batch(s, uid, batch)
        kept = f"; {res['n_kept']} changed by hand since were kept" if res["n_kept"] else ""
        return {**res, "msg": f"undone: bulk {res['action']} ({res['n_restored']} changes){kept}"}

    def tag(self, uid, name, body):
        with self.ctx.Session() as s:
            res = tags.add_tag(s, uid, _pid(body), _text(body, "tag", 80), _text(body, "label", 4))
            return {**res, "html": self._notes(s, res["puzzle_id"], name)}

    def untag(self, uid, name, body):
        with self.ctx.Session() as s:
            tags.remove_tag(s, uid, _pid(body), _text(body, "tag", 80), _text(body, "label", 4))
            return {"html": self._notes(s, _pid(body), name)}

    def comment(self, uid, name, body):
        with self.ctx.Session() as s:
            res = tags.add_comment(s, uid, _pid(body), _text(body, "text"), _text(body, "label", 4))
            return {**res, "html": self._notes(s, res["puzzle_id"], name)}

    def notes(self, uid, name, body):
        with self.ctx.Session() as s:
            return {"html": self._notes(s, _pid(body), name)}

    def _notes(self, s, pid: str, name: str) -> str:
        return str(render("notes.html", puzzle_id=pid, notes=tags.notes_of(s, pid), blind=False,
                          removable=self.ctx.auth.role_of(name) in tags.TAG_ROLES))


def register(app: FastAPI, ctx: WebContext) -> None:
    """Add the routes; call before the gallery's Gradio app is mounted at /gallery."""
    add_action_routes(app, ctx, PAGE, PREFIX, ACTIONS, GalleryActions(ctx))

"""The curate page's JSON API: POST /curate/api/<action>, called by app/web/pages/curate/curate.js.

Why not Gradio events: a verdict through Gradio's queue (join, SSE stream, diff, Svelte re-render)
cost ~160-180 ms before the next puzzle's HTML was even in the page on the shared VM; one fetch of a
small JSON answer costs a few ms plus the handler. The handlers are the same `CurateActions` the page
always used, so verdicts still go through `db.review` (leases, append-only history, undo).

Access: these paths are under /curate, so the app's middleware already refused anyone whose role may
not curate (401/403); each handler checks the role again (`Auth.require`) before touching the
database; the checks of every request are app/web/json_api.py's. Verdicts and option verdicts are
taken only on a puzzle leased to the curator or one they judged before (`db.review.check_may_judge`).
Bad input gets 400 with one line, `{"error": ...}`."""
from __future__ import annotations

from fastapi import FastAPI
from sqlalchemy.orm import sessionmaker

from app.web.common import WebContext
from app.web.json_api import add_action_routes
from app.web.pages.curate.page import MAX_KEYS, PAGE, CurateActions, new_state
from db.models.curation import REASON_CODES
from mvp_core.errors import UserError

PREFIX = "/curate/api"
MAX_HISTORY = 500          # puzzles remembered for <- / -> per tab (the oldest are dropped)
VERDICTS = ("accept", "reject", "skip")


def _ids(raw, what: str) -> list[str]:
    if raw is None:
        return []
    if not isinstance(raw, list) or not all(isinstance(x, str) and 0 < len(x) <= 200 for x in raw):
        raise UserError(f"bad request: state.{what} must be a list of puzzle ids")
    return raw[-MAX_HISTORY:]


def parse_state(raw) -> dict:
    """The tab's navigation state as the browser sent it, checked. It grants nothing: any curator may
    look at any puzzle (deep links), and every write is made as the session's own user."""
    if raw is None:
        return new_state()
    if not isinstance(raw, dict):
        raise UserError("bad request: state must be an object")
    pid = raw.get("pid")
    if pid is not None and not (isinstance(pid, str) and 0 < len(pid) <= 200):
        raise UserError("bad request: state.pid must be a puzzle id or null")
    return {"pid": pid, "back": _ids(raw.get("back"), "back"), "fwd": _ids(raw.get("fwd"), "fwd"),
            "filter": _filters(raw.get("filter"), "state.filter")}


def _index(body: dict) -> int:
    i = body.get("index")
    if not isinstance(i, int) or isinstance(i, bool) or not 1 <= i <= MAX_KEYS:
        raise UserError(f"bad request: index must be an option number 1-{MAX_KEYS}")
    return i


def _check_assigned(Read: sessionmaker, uid: int, st: dict) -> None:
    if st.get("pid"):
        from db.review import check_may_judge
        with Read() as s:
            check_may_judge(s, uid, st["pid"])


def _dispatch(act: CurateActions, Read: sessionmaker, uid: int, action: str, body: dict):
    st = parse_state(body.get("state"))
    if action == "load":
        deep = body.get("puzzle")
        if deep is not None and not isinstance(deep, str):
            raise UserError("bad request: puzzle must be a puzzle id")
        return act.load(uid, deep or None, st if body.get("state") is not None else None)
    if action == "answer":
        labels, secs = body.get("labels"), body.get("seconds", 0.0)
        if not isinstance(labels, list) or not all(isinstance(x, str) and len(x) <= 4 for x in labels) \
                or len(labels) > MAX_KEYS:
            raise UserError("bad request: labels must be a list of option labels")
        _check_assigned(Read, uid, st)
        return act.answer(uid, st, labels, secs)
    if action == "verdict":
        v, note = body.get("verdict"), body.get("note") or ""
        if v not in VERDICTS:
            raise UserError(f"bad request: verdict must be one of {', '.join(VERDICTS)}")
        if not isinstance(note, str) or len(note) > 2000:
            raise UserError("bad request: note must be text of at most 2000 characters")
        _check_assigned(Read, uid, st)
        return act.verdict(uid, st, v, note.strip())
    if action == "toggle":
        reason = body.get("reason")
        if reason not in REASON_CODES:
            raise UserError(f"bad request: reason must be one of {', '.join(REASON_CODES)}")
        index, to = _index(body), body.get("to")
        if to not in (None, "keep", "reject"):
            raise UserError("bad request: to must be keep or reject")
        _check_assigned(Read, uid, st)
        return act.toggle(uid, st, index, reason, to)
    if action == "undo":
        return act.undo(uid, st)
    if action == "move":
        step = body.get("step")
        if step not in (-1, 1) or isinstance(step, bool):
            raise UserError("bad request: step must be -1 or 1")
        return act.move(uid, st, step)
    if action == "filter":
        return act.filter(uid, st, _filters(body.get("filters")))
    if action == "progress":
        return {"html": act.progress(uid)}
    if action in ("tag", "untag", "comment"):
        key = "text" if action == "comment" else "tag"
        value, label = body.get(key), body.get("label") or ""
        if not isinstance(value, str) or len(value) > 2000:
            raise UserError(f"bad request: {key} must be text of at most 2000 characters")
        if not isinstance(label, str) or len(label) > 4:
            raise UserError("bad request: label must be an option label")
        return act.note(uid, st, action, value, label if action == "untag" else "")
    raise UserError(f"bad request: no action {action!r}")


ACTIONS = ("load", "answer", "verdict", "toggle", "undo", "move", "filter", "progress", "tag", "untag", "comment")


def _filters(raw, what: str = "filters") -> dict:
    """The queue filter, checked: video id, status, kind (text) and difficulty bounds (numbers in
    [0, 1]); only the parts that are set (`db.review.browse.make_filter` arguments)."""
    from db.review.browse import make_filter
    if raw is None:
        return {}
    if not isinstance(raw, dict):
        raise UserError(f"bad request: {what} must be an object")
    out: dict = {}
    for key in ("video", "status", "kind"):
        v = raw.get(key)
        if v in (None, ""):
            continue
        if not isinstance(v, str) or len(v) > 64:
            raise UserError(f"bad request: {what}.{key} must be text")
        out[key] = v
    for key in ("min_difficulty", "max_difficulty"):
        v = raw.get(key)
        if v in (None, ""):
            continue
        if not isinstance(v, (int, float)) or isinstance(v, bool):
            raise UserError(f"bad request: {what}.{key} must be a number")
        out[key] = float(v)
    make_filter(**out)             # the same checks the queue makes (status, bounds): one line each
    return out


def register(app: FastAPI, ctx: WebContext) -> None:
    """Add the routes; call before the curate page's Gradio app is mounted at /curate, so these
    routes are matched first."""
    from db.engine import read_engine
    act = CurateActions(ctx)
    Read = sessionmaker(read_engine(ctx.Session.kw["bind"]))
    add_action_routes(app, ctx, PAGE, PREFIX, ACTIONS,
                      lambda uid, _name, action, body: _dispatch(act, Read, uid, action, body))

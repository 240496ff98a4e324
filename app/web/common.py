"""Pieces every page shares: the context a page is built with, the navigation bar, HTML escaping and
the wrapper that turns a refused or bad request into one line in the page (every other component
kept as it was) instead of a traceback and "Error" badges (`guard` + `keep_state`)."""
from __future__ import annotations

import contextlib
import functools
import html
import inspect
import logging
from dataclasses import dataclass
from pathlib import Path

import gradio as gr
from sqlalchemy.orm import sessionmaker

from app.web.auth import Auth, Forbidden
from app.web.pages import BY_PATH
from app.web.templating import render
from mvp_core.errors import UserError

log = logging.getLogger("mvp.web")


@dataclass
class WebContext:
    """What each page module gets from `app.web.server.build_app`."""
    Session: sessionmaker     # database sessions (one short session per request)
    data_dir: Path            # the only directory whose files are ever served
    auth: Auth
    pages: tuple[str, ...] = ()   # the pages mounted in this server (a page module may be missing)


def page_blocks(title: str) -> gr.Blocks:
    """A page's Blocks, titled. Gradio's analytics off: with them on, every Blocks starts a thread that asks
    the package index for Gradio's latest version (a studio server calls out to nobody, and those checks
    were ~0.2 s of CPU per `mvp serve` start; docs/web.md, "Speed and memory")."""
    return gr.Blocks(title=f"MVP Studio · {title}", analytics_enabled=False)


def esc(x) -> str:
    """For the pages still built from f-strings; new HTML goes through templates (app.web.templating)."""
    return html.escape(str(x), quote=True)


def nav_html(ctx: WebContext, user: str | None, current: str) -> str:
    """The top bar: the pages this user's role may open, who is logged in, and log out."""
    pages = [p for p in ctx.auth.pages_for(user) if not ctx.pages or p in ctx.pages]
    return render("nav.html", links=nav_links(pages, current), user=user, role=ctx.auth.role_of(user) or "?")


def nav_links(pages: list[str], current: str) -> list[dict]:
    return [{"page": page, "title": BY_PATH[page].title, "active": page == current} for page in pages]


def forbidden_html(user: str, role: str, page: str, pages: list[str]) -> str:
    """The page a role may not open, as a page (navigation to the pages it may open and a way back),
    not a JSON error (docs/web.md, "Roles")."""
    nav = render("nav.html", links=nav_links(pages, page), user=user, role=role)
    back = pages[0] if pages else ""
    return render("forbidden.html", nav=nav, user=user, role=role, title=BY_PATH[page].title,
                  roles=" and ".join(sorted(BY_PATH[page].roles)), back=f"/{back}/" if back else "/login",
                  back_title=BY_PATH[back].title if back else "the login")


def msg_html(text: str, kind: str = "info", refused: bool = False) -> str:
    """One line for a page's message box; `refused` marks a refused request (`keep_state`), so an
    API caller can tell a refusal from a result."""
    return render("message.html", text=text, kind=kind, refused=refused) if text else ""


def filled(**props) -> dict:
    """What a page's load returns for a field built read-only (`interactive=False`): its value (and any
    other props), now editable. Fields a user types into start read-only until the load has filled
    them: text typed before a slow load returned was overwritten by the load and then saved or
    launched as what the user never saw (the Admin folders box, the Train form)."""
    return gr.update(interactive=True, **props)


class Refused(gr.Error):
    """A user error or a refusal inside a handler: one line for the user, no traceback in the log.
    `keep_state` turns it into that line in the page's message box (or a notice) and leaves every
    other output as it was; a handler outside `keep_state` still shows it as Gradio's error."""

    def __init__(self, message: str, page: str = "", logged: bool = False):
        super().__init__(message, print_exception=False)
        self.page, self.logged = page, logged


@contextlib.contextmanager
def guard(ctx: WebContext, request: gr.Request | None, page: str):
    """`with guard(ctx, request, "curate") as uid:` checks the caller's role server-side before a
    handler runs (the page is also refused at the HTTP layer; this is the second line) and turns
    UserError / Forbidden into `Refused`: one line, never a stack trace (see `keep_state`)."""
    try:
        uid = ctx.auth.require(getattr(request, "username", None), page)
    except Forbidden as e:
        raise Refused(f"forbidden: {e}", page) from None
    try:
        yield uid
    except UserError as e:
        raise Refused(str(e), page) from None
    except Exception as e:     # a full disk / read-only data folder: one line, logged (db/faults.py)
        from db.faults import storage_problem
        line = storage_problem(e)
        if line is None:
            raise
        log.error("/%s: %s", page, line)
        raise Refused(line, page, logged=True) from None


# Loaded on every page (static/session.js): an answer 401 (the session ended) takes the tab to the
# login page and back to the same place afterwards, instead of error notices on every panel.
SESSION_SCRIPT = '<script src="/static/session.js" defer></script>'
MSG_SUFFIX = "-msg"     # a page's message box: the output whose elem_id ends so gets a refusal's line


def keep_state(blocks: gr.Blocks) -> gr.Blocks:
    """Wrap every plain handler of `blocks` so that a `Refused` (a user error) is answered with one
    line and nothing else changes: the line goes into the handler's message box (an output whose
    elem_id ends with MSG_SUFFIX) or, when it has none, into a notice; every other output is left
    as it was (`gr.skip()`), so no component turns into an "Error" badge and no field is cleared;
    the server log gets one line. Real faults still raise (and print their traceback)."""
    for fn in blocks.fns.values():
        if fn.fn is None or getattr(fn.fn, "_keeps_state", False) or fn.is_validator_function \
                or inspect.iscoroutinefunction(fn.fn) or inspect.isgeneratorfunction(fn.fn) \
                or inspect.isasyncgenfunction(fn.fn):
            continue
        fn.fn = _refusal_as_line(fn.fn, list(fn.outputs))
    return blocks


def _refusal_as_line(handler, outputs: list):
    @functools.wraps(handler)
    def wrapped(*args, **kwargs):
        try:
            return handler(*args, **kwargs)
        except Refused as e:
            if not e.logged:
                log.warning("refused on /%s: %s", e.page or "?", e.message)
            values = [msg_html(e.message, "error", refused=True) if _is_msg_box(o) else gr.skip() for o in outputs]
            if not any(_is_msg_box(o) for o in outputs):
                gr.Warning(e.message)
            if not outputs:
                return None
            return values[0] if len(values) == 1 else tuple(values)
    wrapped._keeps_state = True
    return wrapped


def on_latest(triggers: list, fn, inputs: list, outputs: list, **kwargs):
    """One event for several controls that fill the same outputs: a change that comes while it runs is
    run after it with the controls' values then (Gradio's "always_last"), so the outputs end on the last
    change. An event per control could answer an older change last (two quick changes ended on the
    first one's view). Returns the event, for `.then`."""
    return gr.on(triggers, fn, inputs, outputs, trigger_mode="always_last", **kwargs)


def sections_in_one(*parts: tuple):
    """One handler answering for several sections of a page, each given as (handler, its outputs) and
    called with the request, in order: a refusal in one section is answered as `keep_state` answers it
    (its line; its outputs left as they were) and the other sections still fill. A page's first view
    comes in one answer this way (docs/web.md, "Train") without one section's refusal leaving the
    others unfilled, as separate load events would not."""
    kept = [(_refusal_as_line(fn, list(outputs)), len(outputs)) for fn, outputs in parts]

    def handler(request: gr.Request):
        values = []
        for fn, n in kept:
            v = fn(request)
            values.extend([v] if n == 1 else list(v))
        return values
    handler._keeps_state = True
    return handler


def _is_msg_box(component) -> bool:
    return isinstance(component, gr.HTML) and str(getattr(component, "elem_id", "") or "").endswith(MSG_SUFFIX)


def form_number(key: str, value, whole: bool = False, default: int | float | None = None) -> int | float:
    """A number a form sent, or a one-line UserError: empty (unless there is a `default`), not a
    number, NaN/Infinity (Gradio's widget bounds let NaN through: it compares false), or not whole
    when `whole`. Ranges are the config's or the caller's to check."""
    import math
    if value is None or value == "":
        if default is not None:
            return default
        raise UserError(f"{key} is empty; enter a number")
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise UserError(f"{key} must be a number, not {str(value)[:40]!r}")
    if not math.isfinite(value):
        raise UserError(f"{key} must be a finite number, not {value}")
    if whole:
        if value != int(value):
            raise UserError(f"{key} must be a whole number, not {value:g}")
        return int(value)
    return float(value)


WHOLE = "mvp-whole"     # the class that marks a form's whole-number field (tests walk the pages for it)


def whole_number(value: int | None, label: str, **kwargs) -> gr.Number:
    """A form field meant for a whole number. Never Gradio's `precision=0`: that rounds 2.5 to 2 before
    the handler sees it, so the work would start with a number nobody typed. The handler reads it with
    `form_number(key, value, whole=True)`, which refuses 2.5 with one line."""
    return gr.Number(value, label=label, step=1, elem_classes=[WHOLE], **kwargs)

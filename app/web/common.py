"""Pieces every page shares: the context a page is built with, the navigation bar, HTML escaping and
the wrapper that turns a refused or bad request into a message instead of a traceback."""
from __future__ import annotations

import contextlib
import html
from dataclasses import dataclass
from pathlib import Path

import gradio as gr
from sqlalchemy.orm import sessionmaker

from app.web.auth import Auth, Forbidden
from app.web.pages import BY_PATH
from app.web.templating import render
from mvp_core.errors import UserError


@dataclass
class WebContext:
    """What each page module gets from `app.web.server.build_app`."""
    Session: sessionmaker     # database sessions (one short session per request)
    data_dir: Path            # the only directory whose files are ever served
    auth: Auth
    pages: tuple[str, ...] = ()   # the pages mounted in this server (a page module may be missing)


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


def msg_html(text: str, kind: str = "info") -> str:
    return render("message.html", text=text, kind=kind) if text else ""


def filled(**props) -> dict:
    """What a page's load returns for a field built read-only (`interactive=False`): its value (and any
    other props), now editable. Fields a user types into start read-only until the load has filled
    them: text typed before a slow load returned was overwritten by the load and then saved or
    launched as what the user never saw (the Admin folders box, the Train form)."""
    return gr.update(interactive=True, **props)


@contextlib.contextmanager
def guard(ctx: WebContext, request: gr.Request | None, page: str):
    """`with guard(ctx, request, "curate") as uid:` checks the caller's role server-side before a
    handler runs (the page is also refused at the HTTP layer; this is the second line) and shows
    UserError / Forbidden as a Gradio error message instead of a stack trace."""
    try:
        uid = ctx.auth.require(getattr(request, "username", None), page)
    except Forbidden as e:
        raise gr.Error(f"forbidden: {e}") from None
    try:
        yield uid
    except UserError as e:
        raise gr.Error(str(e)) from None


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

"""HTML from Jinja2 templates, every value autoescaped (docs/web.md, "Layout").

    from app.web.templating import render
    html = render("nav.html", links=[...], user=name, role=role)    # ready for gr.HTML or a response

Templates are looked up in app/web/templates/ (the ones every page shares: nav, message, login)
and then in each page package (app/web/pages/<page>/*.html); page template names start with the page
name, so none shadows another.

A value is escaped unless it is `Markup` (what `render` returns, so a rendered fragment can go into
another template as is). Templates get `frame_url` (the URL of a data-directory frame) as a global.
An undefined name is an error, not an empty string, so a typo in a template fails its test instead
of rendering blank. The login page was the first user (docs/web.md, "Login and sessions")."""
from __future__ import annotations

from functools import lru_cache
from pathlib import Path

from jinja2 import Environment, FileSystemLoader, StrictUndefined, select_autoescape
from markupsafe import Markup

from app.web.files import frame_url

TEMPLATES_DIR = Path(__file__).resolve().parent / "templates"


def _search_path() -> list[Path]:
    from app.web.pages import PAGES
    return [TEMPLATES_DIR, *(p.folder for p in PAGES)]


@lru_cache(maxsize=1)
def environment() -> Environment:
    env = Environment(loader=FileSystemLoader(_search_path()),
                      autoescape=select_autoescape(default=True, default_for_string=True),
                      undefined=StrictUndefined, trim_blocks=True, lstrip_blocks=True)
    env.globals["frame_url"] = frame_url
    return env


def render(name: str, **values) -> Markup:
    """The template `name` (shared or a page package's) rendered with `values`, escaped."""
    return Markup(environment().get_template(name).render(**values))

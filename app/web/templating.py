"""Jinja2 templates for the server-rendered HTML pages (app/web/templates/). Autoescape is on for
every template, so a value put into a page is escaped unless a template says otherwise; the login
page is the first user (docs/web.md, "Login and sessions")."""
from __future__ import annotations

from functools import lru_cache
from pathlib import Path

from jinja2 import Environment, FileSystemLoader, StrictUndefined, select_autoescape

TEMPLATES_DIR = Path(__file__).resolve().parent / "templates"


@lru_cache(maxsize=1)
def environment() -> Environment:
    return Environment(loader=FileSystemLoader(TEMPLATES_DIR),
                       autoescape=select_autoescape(default=True, default_for_string=True),
                       undefined=StrictUndefined, trim_blocks=True, lstrip_blocks=True)


def render(name: str, **values) -> str:
    """The template `name` (a file in app/web/templates/) rendered with `values`, escaped."""
    return environment().get_template(name).render(**values)

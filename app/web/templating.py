"""HTML from Jinja2 templates (app/web/templates/), every value autoescaped.

    from app.web.templating import render
    html = render("nav.html", links=[...], user=name)      # a str, ready for gr.HTML

Values are escaped unless they are `Markup` (a fragment another template rendered). Templates get
`frame_url` (the URL of a data-directory frame) as a global. An undefined name is an error, not an
empty string, so a typo in a template fails its test instead of rendering blank."""
from __future__ import annotations

import functools
from pathlib import Path

import jinja2
from markupsafe import Markup

from app.web.files import frame_url

TEMPLATES = Path(__file__).resolve().parent / "templates"


@functools.cache
def environment() -> jinja2.Environment:
    env = jinja2.Environment(loader=jinja2.FileSystemLoader(TEMPLATES), autoescape=True,
                             undefined=jinja2.StrictUndefined, trim_blocks=True, lstrip_blocks=True,
                             auto_reload=False)
    env.globals["frame_url"] = frame_url
    return env


def render(name: str, **context) -> Markup:
    """The template `name` rendered with `context` (a Markup string: safe to nest in another render)."""
    return Markup(environment().get_template(name).render(**context))

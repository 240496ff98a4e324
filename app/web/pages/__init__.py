"""The web app's pages: one package per page (app/web/pages/<package>/: its layout and handlers in
page.py, any HTTP API in api.py, its templates and scripts beside them) and PAGES, the one registry
that gives each page its path, the roles that may open it, its place in the navigation and its
scripts (docs/web.md, "Pages"). The server mounts, guards and links exactly what PAGES lists.

Kept free of Gradio and of the page modules so that app/web/auth.py can read the roles cheaply;
`Page.module()` imports a page's code only when the server builds it."""
from __future__ import annotations

import importlib
from dataclasses import dataclass
from pathlib import Path

from db.models.curation import ROLES

HERE = Path(__file__).resolve().parent
RESEARCH = frozenset({"researcher", "admin"})


@dataclass(frozen=True)
class Page:
    path: str                    # URL segment: the page lives at /<path>/, its Gradio routes under it
    title: str                   # the navigation link's text
    package: str                 # app/web/pages/<package>/
    roles: frozenset[str]        # who may open the page and call its endpoints (the guard checks it)
    scripts: tuple[str, ...] = ()  # files in the package loaded in the page's head, in order ("<package>/<file>":
                                   # another page's script, which that page lists too, e.g. the gallery's)
    api: bool = False            # the package has api.py with register(app, ctx): plain HTTP routes

    @property
    def folder(self) -> Path:
        return HERE / self.package

    def module(self, name: str = "page"):
        return importlib.import_module(f"app.web.pages.{self.package}.{name}")


# In navigation order.
PAGES: tuple[Page, ...] = (
    Page("curate", "Curate", "curate", frozenset(ROLES),
         scripts=("curate.js", "hotkeys.js", "gallery/gallery.js", "view_switch.js"), api=True),
    Page("gallery", "Gallery", "gallery", frozenset(ROLES), scripts=("gallery.js",), api=True),
    Page("datasets", "Data", "data", RESEARCH, scripts=("gallery/gallery.js",), api=True),
    Page("rollouts", "Rollouts", "rollouts", RESEARCH, scripts=("rollouts.js",), api=True),
    Page("stats", "Stats", "stats", RESEARCH),
    Page("train", "Train", "train", RESEARCH),
    Page("admin", "Admin", "admin", frozenset({"admin"})),
)
BY_PATH: dict[str, Page] = {p.path: p for p in PAGES}


def script_url(page: Page, name: str) -> str:
    """Where the server serves a page's script (app/web/server.py, `_add_static_routes`); a
    "<package>/<file>" name is served where its own page serves it."""
    return f"/static/pages/{name}" if "/" in name else f"/static/pages/{page.package}/{name}"

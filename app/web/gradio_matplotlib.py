"""Gradio runs every event inside `gradio.utils.MatplotlibBackendMananger` (its spelling), which imports
matplotlib and switches it to the agg backend for the event, for pages that draw matplotlib figures. No
page here does (the one chart is Plotly, app/web/pages/train/explore.py), yet wherever matplotlib is
installed the server's first event imported it, and pyplot with it, to read the backend: about 0.5 s of
CPU and 20-40 MB resident for the rest of the server's life (docs/web.md, "Speed and memory").

Hand-written because Gradio has no switch for it: the manager is replaced by one that does its switch
only where matplotlib is already imported (by something else in the process), and otherwise nothing.
If a Gradio release renames the class, nothing is replaced and Gradio behaves as shipped."""
from __future__ import annotations

import sys

CLASS = "MatplotlibBackendMananger"


def install() -> None:
    """Replace Gradio's per-event matplotlib manager (once per process)."""
    from gradio import utils
    shipped = getattr(utils, CLASS, None)
    if shipped is None or getattr(shipped, "only_if_imported", False):
        return

    class OnlyIfImported(shipped):
        only_if_imported = True

        def __enter__(self):
            self.active = "matplotlib" in sys.modules
            return super().__enter__() if self.active else None

        def __exit__(self, *exc):
            return super().__exit__(*exc) if self.active else None

    setattr(utils, CLASS, OnlyIfImported)

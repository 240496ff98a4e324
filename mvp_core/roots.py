"""Which server paths a web user may name: the one rule for every field that takes one (docs/security.md,
"Server paths"): the Data page's video folder (db/puzzles/sources.py), the Train page's typed model path
and every path key of a training config typed there (app/web/jobs.py: eval_puzzles, eval_data_dir, ...).

A path is accepted only when its real path (symlinks followed) lies inside one of the roots. The roots
are checked before anything else is looked at, so a path outside them gets the same answer whether it
exists, is a file, a folder or unreadable: the messages never tell a user what is on the server
outside the roots, and nothing outside them is ever opened."""
from __future__ import annotations

import os
from pathlib import Path

from mvp_core.errors import UserError

KINDS = ("dir", "file", "any")   # "any": the roots only (the caller checks what it names)


def inside_roots(roots: list[str], path: str, what: str, kind: str = "dir") -> Path:
    """The real path of `path` when it is a `kind` ("dir", "file", "any") inside one of `roots`, else a
    one-line UserError naming `what` (e.g. "model", "eval_puzzles")."""
    if kind not in KINDS:
        raise ValueError(f"kind must be one of {KINDS}, not {kind!r}")
    p = (path or "").strip()
    if not p or "\x00" in p or not os.path.isabs(p):
        raise UserError(f"{what}: give an absolute path on the server")
    real = Path(os.path.realpath(p))      # never raises, whatever exists
    if not any(real == r or r in real.parents for r in (Path(os.path.realpath(x)) for x in roots)):
        shown = ", ".join(roots) if roots else "none yet: an admin sets them on the Admin page"
        raise UserError(f"{what} {p} is outside the allowed folders ({shown})")
    if kind == "dir" and not real.is_dir():
        raise UserError(f"{what}: no such folder: {p}")
    if kind == "file" and not real.is_file():
        raise UserError(f"{what}: no such file: {p}")
    return real

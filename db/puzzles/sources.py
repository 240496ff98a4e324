"""Where videos may come from: the allowed roots an admin sets, and the folders added under them.

The web app reads videos only from server-side folders inside an allowed root (team settings
`data.allowed_roots` and `data.folders`). A folder is checked by its real path (after following
symlinks), so a symlink to elsewhere is refused like the path it points to; symlinked *files*
inside a folder are then checked by the scan, as synthesis does (`mvp_core.video.scan`: a link
leading out of the folder is skipped with its reason)."""
from __future__ import annotations

import os
from pathlib import Path

from sqlalchemy.orm import Session

from db.settings import get_setting, put_setting
from mvp_core.errors import UserError

ROOTS_KEY = "data.allowed_roots"
FOLDERS_KEY = "data.folders"
MAX_ROOTS = 50


def _get(session: Session, key: str) -> list[str]:
    value = get_setting(session, key)
    return list(value) if isinstance(value, list) else []


def allowed_roots(session: Session) -> list[str]:
    return _get(session, ROOTS_KEY)


def set_allowed_roots(session: Session, lines: list[str]) -> list[str]:
    """Replace the allowed roots (absolute paths of existing folders; stored by real path)."""
    roots: list[str] = []
    for raw in lines:
        p = raw.strip()
        if not p:
            continue
        if "\x00" in p or not os.path.isabs(p):
            raise UserError(f"allowed folder {p!r} must be an absolute path")
        real = Path(p).resolve()
        if not real.is_dir():
            raise UserError(f"allowed folder {p!r} is not an existing folder")
        if str(real) not in roots:
            roots.append(str(real))
    if len(roots) > MAX_ROOTS:
        raise UserError(f"at most {MAX_ROOTS} allowed folders")
    put_setting(session, ROOTS_KEY, roots)
    return roots


def check_folder(roots: list[str], path: str) -> Path:
    """The real path of `path` if it is a folder inside one of `roots`, else UserError (one line that
    says nothing about what exists outside the roots: mvp_core/roots.py)."""
    from mvp_core.roots import inside_roots
    if not roots:
        raise UserError("no video folders are allowed yet: an admin sets them on the Admin page")
    return inside_roots(roots, path, "folder", "dir")


def folders(session: Session) -> list[str]:
    """The added folders that are still inside an allowed root (an admin may have narrowed them)."""
    roots = allowed_roots(session)
    out = []
    for f in _get(session, FOLDERS_KEY):
        try:
            out.append(str(check_folder(roots, f)))
        except UserError:
            continue
    return out


def add_folder(session: Session, path: str) -> str:
    """Add a folder of videos (checked against the allowed roots); returns its real path."""
    real = str(check_folder(allowed_roots(session), path))
    cur = _get(session, FOLDERS_KEY)
    if real not in cur:
        put_setting(session, FOLDERS_KEY, cur + [real])
    return real


def remove_folder(session: Session, path: str) -> None:
    put_setting(session, FOLDERS_KEY, [f for f in _get(session, FOLDERS_KEY) if f != path])

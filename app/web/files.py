"""Serving files from the data directory, and nothing else.

Every path a client sends is relative to the data directory. Refused: empty paths, absolute paths
(`/etc/passwd`, `C:\\...`), backslashes, NUL bytes, any `..` component, and anything whose real path
(after following symlinks) is not inside the data directory's real path. The checks run on the
decoded path, so `%2e%2e` is refused like `..`."""
from __future__ import annotations

import os
from pathlib import Path, PurePosixPath

from mvp_core.errors import UserError
from mvp_core.video.frames import THUMB_SIDE  # noqa: E402  longest side of filmstrip/option thumbnails


class PathRefused(UserError):
    """The requested path is not a file under the data directory."""


def safe_path(data_dir: Path, rel: str) -> Path:
    """The real file behind `rel` under `data_dir`, or PathRefused."""
    if not rel or "\x00" in rel or "\\" in rel or rel.startswith(("/", "~")) or os.path.isabs(rel):
        raise PathRefused(f"refused path {rel!r}: must be relative to the data directory")
    parts = PurePosixPath(rel).parts
    if any(p in ("..", ".") for p in parts) or (parts and ":" in parts[0]):
        raise PathRefused(f"refused path {rel!r}: no '..', '.' or drive components")
    root = data_dir.resolve()
    try:
        real = (root / rel).resolve(strict=True)
    except (FileNotFoundError, NotADirectoryError, RuntimeError, OSError):
        raise PathRefused(f"no such file under the data directory: {rel!r}") from None
    if root != real and root not in real.parents:
        raise PathRefused(f"refused path {rel!r}: it leads outside the data directory")
    if not real.is_file():
        raise PathRefused(f"not a file: {rel!r}")
    return real


def frame_url(uri: str, thumb: bool = True) -> str:
    """The URL the pages use for a frame uri (relative to the data directory)."""
    return f"/{'thumb' if thumb else 'data'}/{uri}"


def thumbnail(data_dir: Path, rel: str, side: int = THUMB_SIDE) -> Path:
    """A cached, smaller JPEG of a frame (written once under data/thumbs/ by the frame store)."""
    from mvp_core.video.frames import FrameStore
    safe_path(data_dir, rel)                 # the same refusals as for the original
    try:
        return FrameStore(data_dir).thumbnail(rel, side)
    except ValueError as e:                  # not under frames/: only frames get thumbnails
        raise PathRefused(str(e)) from None

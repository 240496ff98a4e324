"""Serving media from the data directory, and nothing else (docs/web.md, "Files").

Only what the pages show can be fetched: frames (`frames/`), their thumbnails (`thumbs/`) and the "play
in gap" preview clips (`cache/clips/`), each with a media suffix. Everything else under the data
directory -- the SQLite database and its -wal/-shm, puzzles.jsonl, runs/, models/, train/, configs,
exports -- is never opened by a file route, for any role. Not opening the database file matters beyond
secrecy: on Linux, a process that opens and closes a SQLite file drops that process's POSIX locks on
it, and the next process to open the database may then checkpoint and delete the WAL the server is
still writing into (acknowledged verdicts lost at the next restart).

Every path a client sends is relative to the data directory. Refused: empty paths, absolute paths
(`/etc/passwd`, `C:\\...`), backslashes, NUL bytes, any `..` or `.` component, paths outside the media
folders or without a media suffix, and anything whose real path (after following symlinks) is not a
media file inside a media folder's real path. The checks run on the decoded path, so `%2e%2e` is
refused like `..`, and on the real path, so a symlink `frames/x.jpg -> ../mvp.sqlite` is refused; a hard
link is refused by its link count and the database's inode (docs/security.md)."""
from __future__ import annotations

import os
from pathlib import Path, PurePosixPath

from mvp_core.errors import UserError
from mvp_core.video.frames import THUMB_SIDE  # noqa: E402  longest side of filmstrip/option thumbnails

# folder (relative to the data directory) -> the suffixes served from it
MEDIA_DIRS: dict[str, frozenset[str]] = {
    "frames": frozenset({".jpg", ".jpeg", ".png", ".webp"}),
    "thumbs": frozenset({".jpg", ".jpeg"}),
    "cache/clips": frozenset({".mp4", ".webm"}),
}


class PathRefused(UserError):
    """The requested path is not a media file under the data directory (HTTP `status`: 403 refused,
    404 missing, 415 a frame file that is no image)."""

    def __init__(self, msg: str, status: int = 403):
        super().__init__(msg)
        self.status = status


def _media_dir_of(rel: PurePosixPath) -> str | None:
    for d in MEDIA_DIRS:
        if rel.parts[:len(PurePosixPath(d).parts)] == PurePosixPath(d).parts and \
                len(rel.parts) > len(PurePosixPath(d).parts) and rel.suffix.lower() in MEDIA_DIRS[d]:
            return d
    return None


def safe_path(data_dir: Path, rel: str) -> Path:
    """The real media file behind `rel` under `data_dir`, or PathRefused. Only names and stat calls
    are used to decide; no file is opened here."""
    if not rel or "\x00" in rel or "\\" in rel or rel.startswith(("/", "~")) or os.path.isabs(rel):
        raise PathRefused(f"refused path {rel!r}: must be relative to the data directory")
    parts = PurePosixPath(rel).parts
    if any(p in ("..", ".") for p in parts) or (parts and ":" in parts[0]):
        raise PathRefused(f"refused path {rel!r}: no '..', '.' or drive components")
    media = _media_dir_of(PurePosixPath(rel))
    if media is None:
        raise PathRefused(f"refused path {rel!r}: only frames, thumbnails and preview clips are served")
    root = data_dir.resolve()
    try:
        real = (root / rel).resolve(strict=True)
    except (FileNotFoundError, NotADirectoryError, RuntimeError, OSError):
        raise PathRefused(f"no such file under the data directory: {rel!r}", 404) from None
    media_root = (root / media).resolve()
    if media_root not in real.parents or real.suffix.lower() not in MEDIA_DIRS[media]:
        raise PathRefused(f"refused path {rel!r}: it leads outside the {media}/ folder")
    if not real.is_file():
        raise PathRefused(f"not a file: {rel!r}")
    _not_the_database(root, real, rel)
    return real


DB_FILES = ("mvp.sqlite", "mvp.sqlite-wal", "mvp.sqlite-shm")


def _not_the_database(root: Path, real: Path, rel: str) -> None:
    """Refuse a file with more than one link (a hard link can make any file look like a frame) or whose
    inode is the database's or its -wal/-shm. Decided by os.stat alone, before anything opens the file:
    opening and closing the SQLite file in this process would drop the server's POSIX locks on it."""
    st = os.stat(real)
    if st.st_nlink > 1:
        raise PathRefused(f"refused path {rel!r}: a file with more than one link is not served")
    for name in DB_FILES:
        try:
            db = os.stat(root / name)
        except OSError:
            continue
        if (db.st_dev, db.st_ino) == (st.st_dev, st.st_ino):
            raise PathRefused(f"refused path {rel!r}: not a media file")


def frame_url(uri: str, thumb: bool = True) -> str:
    """The URL the pages use for a frame uri (relative to the data directory)."""
    return f"/{'thumb' if thumb else 'data'}/{uri}"


def thumbnail(data_dir: Path, rel: str, side: int = THUMB_SIDE) -> Path:
    """A cached, smaller JPEG of a frame (written once under data/thumbs/ by the frame store)."""
    from mvp_core.video.frames import FrameStore, NotAnImage
    if not rel.startswith("frames/"):
        raise PathRefused(f"refused path {rel!r}: only frames have thumbnails")
    safe_path(data_dir, rel)                 # the same refusals as for the original
    try:
        return FrameStore(data_dir).thumbnail(rel, side)
    except NotAnImage as e:                  # a file in frames/ that is no image
        raise PathRefused(str(e), 415) from None
    except ValueError as e:                  # not under frames/: only frames get thumbnails
        raise PathRefused(str(e)) from None

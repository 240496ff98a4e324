"""The one rule for every file the server hands out (docs/security.md, "Served files"): frames, their
thumbnails, preview clips and the Data page's export zips. `servable` decides; every file route calls it
(/data, /thumb, /datasets/export) and serves nothing it refused.

A path a client sends is relative to the data directory and names a file in one of the served folders
(`SERVED`) with one of that folder's suffixes. Refused: empty or absolute paths, backslashes, NUL, any
`..` or `.` component, other folders or suffixes; a real path (after following symlinks) outside the
folder's real path; anything but a regular file; a file with more than one link (a hard link can make
any file, the database included, look like a frame) or with the inode of the database or its
-wal/-shm. Those are decided by stat alone, before the file is opened: on Linux a process that opens and
closes a SQLite file drops its own POSIX locks on it, and the next process to open the database may then
checkpoint and delete the WAL the server is still writing into (acknowledged verdicts lost).

Only then is the file opened, and its content must match its suffix (JPEG, PNG, WebP, MP4, WebM, zip
signatures: a copy of the database, SQLite's or a pg_dump file, renamed to an image name is refused,
whatever the engine); in the content-addressed frame store the name must be the sha256 of the bytes
(mvp_core/video/frames.py)."""
from __future__ import annotations

import hashlib
import os
import re
import stat
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from mvp_core.errors import UserError
from mvp_core.video.frames import THUMB_SIDE  # noqa: E402  longest side of filmstrip/option thumbnails


def _jpeg(head: bytes) -> bool:
    return head.startswith(b"\xff\xd8\xff")


# suffix -> does the file's start look like that format
SIGNATURES = {
    ".jpg": _jpeg, ".jpeg": _jpeg,
    ".png": lambda h: h.startswith(b"\x89PNG\r\n\x1a\n"),
    ".webp": lambda h: h[:4] == b"RIFF" and h[8:12] == b"WEBP",
    ".mp4": lambda h: h[4:8] == b"ftyp",
    ".webm": lambda h: h.startswith(b"\x1aE\xdf\xa3"),
    ".zip": lambda h: h[:4] in (b"PK\x03\x04", b"PK\x05\x06"),
}
HEAD_BYTES = 16
SHA_NAME = re.compile(r"^[0-9a-f]{64}$")


@dataclass(frozen=True)
class Folder:
    """A folder the server hands files out of."""
    path: str                          # relative to the data directory
    suffixes: frozenset[str]           # the only suffixes served from it (each has a SIGNATURES entry)
    what: str                          # what its files are, for the refusal line
    content_named: bool = False        # the file name is the sha256 of its bytes, under a <2 hex> folder


SERVED: tuple[Folder, ...] = (
    Folder("frames", frozenset({".jpg", ".jpeg", ".png", ".webp"}), "image", content_named=True),
    Folder("thumbs", frozenset({".jpg", ".jpeg"}), "image"),
    Folder("cache/clips", frozenset({".mp4", ".webm"}), "video clip"),
    Folder("exports", frozenset({".zip"}), "zip"),
)
MEDIA_DIRS = {f.path: f.suffixes for f in SERVED if f.path != "exports"}   # what /data serves
DB_FILES = ("mvp.sqlite", "mvp.sqlite-wal", "mvp.sqlite-shm")


class PathRefused(UserError):
    """The requested path may not be served (HTTP `status`: 403 refused, 404 missing, 415 content that
    is not what its name says)."""

    def __init__(self, msg: str, status: int = 403):
        super().__init__(msg)
        self.status = status


def _folder_of(rel: PurePosixPath, folders) -> Folder | None:
    for f in folders:
        parts = PurePosixPath(f.path).parts
        if rel.parts[:len(parts)] == parts and len(rel.parts) > len(parts) and rel.suffix.lower() in f.suffixes:
            return f
    return None


def _checked_name(rel: str) -> PurePosixPath:
    if not rel or "\x00" in rel or "\\" in rel or rel.startswith(("/", "~")) or os.path.isabs(rel):
        raise PathRefused(f"refused path {rel!r}: must be relative to the data directory")
    parts = PurePosixPath(rel).parts
    if any(p in ("..", ".") for p in parts) or (parts and ":" in parts[0]):
        raise PathRefused(f"refused path {rel!r}: no '..', '.' or drive components")
    return PurePosixPath(rel)


def servable(data_dir: Path, rel: str, folders: tuple[Folder, ...] = SERVED) -> Path:
    """The real file behind `rel` (relative to `data_dir`) if it may be served, else PathRefused."""
    folder = _folder_of(_checked_name(rel), folders)
    if folder is None:
        served = ", ".join(f"{f.path}/" for f in folders)
        raise PathRefused(f"refused path {rel!r}: only files in {served} are served")
    root = Path(data_dir).resolve()
    try:
        real = (root / rel).resolve(strict=True)
    except (FileNotFoundError, NotADirectoryError, RuntimeError, OSError):
        raise PathRefused(f"no such file under the data directory: {rel!r}", 404) from None
    if (root / folder.path).resolve() not in real.parents or real.suffix.lower() not in folder.suffixes:
        raise PathRefused(f"refused path {rel!r}: it leads outside the {folder.path}/ folder")
    st = os.stat(real)
    if not stat.S_ISREG(st.st_mode):
        raise PathRefused(f"not a file: {rel!r}")
    _not_the_database(root, st, f"refused path {rel!r}")
    _content_matches(real, st, rel, folder)
    return real


def _not_the_database(root: Path, st: os.stat_result, label: str) -> None:
    """Refuse a file with more than one link or with the inode of the database or its -wal/-shm, by
    stat alone: opening and closing the SQLite file in this process would drop the server's locks."""
    if st.st_nlink > 1:
        raise PathRefused(f"{label}: a file with more than one link is refused (a hard link can make "
                          "the database look like any file)")
    for name in DB_FILES:
        try:
            db = os.stat(root / name)
        except OSError:
            continue
        if (db.st_dev, db.st_ino) == (st.st_dev, st.st_ino):
            raise PathRefused(f"{label}: that is the studio's database")


STORE_SIGNATURES = (b"SQLite format 3\x00", b"PGDMP")     # a SQLite database, a pg_dump custom-format file


def not_the_store(data_dir: Path, path: Path, what: str) -> None:
    """For a file a user names for a job (a training config's eval_puzzles): refuse the database, its
    -wal/-shm, a link to them, or a copy of a database (SQLite or pg_dump), in one line, before the job
    starts. The same stat-first order as for served files; only a file that passed is opened."""
    label = f"{what} {path}"
    st = os.stat(path)
    if not stat.S_ISREG(st.st_mode):
        raise PathRefused(f"{label}: not a regular file")
    _not_the_database(Path(data_dir).resolve(), st, label)
    with open(path, "rb") as fh:
        if fh.read(HEAD_BYTES).startswith(STORE_SIGNATURES):
            raise PathRefused(f"{label}: that is a database file (SQLite or pg_dump), not puzzles")


def _content_matches(real: Path, st: os.stat_result, rel: str, folder: Folder) -> None:
    """Open the file (not following a link swapped in since the stat) and check its bytes: the format's
    signature, and for the frame store the sha256 its name claims."""
    try:
        fd = os.open(real, os.O_RDONLY | os.O_NOFOLLOW)
    except OSError:
        raise PathRefused(f"no such file under the data directory: {rel!r}", 404) from None
    with os.fdopen(fd, "rb") as fh:
        now = os.fstat(fh.fileno())
        if (now.st_dev, now.st_ino) != (st.st_dev, st.st_ino) or now.st_nlink > 1:
            raise PathRefused(f"refused path {rel!r}: the file changed while it was checked")
        head = fh.read(HEAD_BYTES)
        if not SIGNATURES[real.suffix.lower()](head):
            raise PathRefused(f"refused path {rel!r}: not a readable {folder.what} "
                              f"(its bytes are no {real.suffix.lower()[1:].upper()})", 415)
        if folder.content_named:
            digest = hashlib.sha256(head)
            for block in iter(lambda: fh.read(1 << 20), b""):
                digest.update(block)
            stem = real.stem.lower()
            if not SHA_NAME.match(stem) or real.parent.name != stem[:2] or digest.hexdigest() != stem:
                raise PathRefused(f"refused path {rel!r}: its content does not match its name "
                                  "(frames are named by the sha256 of their bytes)")


def safe_path(data_dir: Path, rel: str) -> Path:
    """The real media file behind `rel` (frames, thumbnails, preview clips): `servable` without exports,
    which only the Data page's download route hands out."""
    return servable(data_dir, rel, tuple(f for f in SERVED if f.path in MEDIA_DIRS))


def frame_url(uri: str, thumb: bool = True) -> str:
    """The URL the pages use for a frame uri (relative to the data directory)."""
    return f"/{'thumb' if thumb else 'data'}/{uri}"


def thumbnail(data_dir: Path, rel: str, side: int = THUMB_SIDE) -> Path:
    """A cached, smaller JPEG of a frame (written once under data/thumbs/ by the frame store); the frame
    and the thumbnail handed out both pass `servable`."""
    from mvp_core.video.frames import FrameStore, NotAnImage
    if not rel.startswith("frames/"):
        raise PathRefused(f"refused path {rel!r}: only frames have thumbnails")
    safe_path(data_dir, rel)                 # the same refusals as for the original
    store = FrameStore(data_dir)
    try:
        thumb = store.thumbnail(rel, side)
    except NotAnImage as e:                  # a file in frames/ that is no image
        raise PathRefused(str(e), 415) from None
    except ValueError as e:                  # not under frames/: only frames get thumbnails
        raise PathRefused(str(e)) from None
    return servable(store.root, thumb.relative_to(store.root).as_posix())

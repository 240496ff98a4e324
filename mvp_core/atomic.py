"""The one atomic write: a file appears whole under its name or not at all, even after a kill -9 or a
power cut. Written to a hidden temporary file in the same folder (so the rename stays on one file system),
flushed to disk, renamed over the target with os.replace, and the folder flushed so the rename itself
survives. Readers never see a half-written file; a failed write leaves the old file as it was."""
from __future__ import annotations

import os
import secrets
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path


def _fsync(path: Path, directory: bool = False) -> None:
    fd = os.open(path, os.O_RDONLY | (os.O_DIRECTORY if directory else 0))
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


@contextmanager
def atomic_path(path: str | os.PathLike, durable: bool = True, suffix: str = ".tmp") -> Iterator[Path]:
    """A temporary path beside `path` for any writer (PyArrow, PIL, SQLite's backup...); when the block
    ends without an error it becomes `path` atomically, otherwise it is removed. The name is hidden
    (leading dot) and unique per call, so concurrent writers and folder listings never meet it.
    `durable=False` skips the two flushes (still whole or absent, but a power cut may lose it): for
    caches that are made again on demand. `suffix` ends the temporary name: a writer that picks its
    format from the extension (ffmpeg) needs ".tmp.mp4"; the default keeps folder globs off it."""
    path = Path(path)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{secrets.token_hex(4)}{suffix}")
    try:
        yield tmp
        if durable:
            _fsync(tmp)
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    if durable:
        _fsync(path.parent, directory=True)


def atomic_write_bytes(path: str | os.PathLike, data: bytes, durable: bool = True) -> None:
    with atomic_path(path, durable) as tmp:
        tmp.write_bytes(data)


def atomic_write_text(path: str | os.PathLike, text: str, durable: bool = True) -> None:
    with atomic_path(path, durable) as tmp:
        tmp.write_text(text, encoding="utf-8")

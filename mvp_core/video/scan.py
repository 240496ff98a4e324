"""Find the video files under the input folders, refusing what must not be read."""
from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from mvp_core.video.decode import VIDEO_EXTENSIONS, not_regular_reason


@dataclass
class Candidate:
    path: Path            # absolute, as found (not resolved: a symlink keeps its own name)
    skip_reason: str = ""  # set when the file must not be processed


def scan(inputs: list[str | os.PathLike]) -> list[Candidate]:
    """Every file with a video extension under the inputs (or the inputs themselves), sorted.
    Symlinks are followed only when they stay inside the folder they were found in. Anything that is
    not a regular file (FIFO, socket, device, directory) is refused with the reason: opening a FIFO
    blocks until a writer appears, which would stall a worker until its time limit."""
    out: dict[Path, Candidate] = {}
    for given in inputs:
        root = Path(given).absolute()
        if not utf8_name(root):
            out[root] = Candidate(root, NAME_NOT_UTF8)
            continue
        if not root.exists() and not root.is_symlink():
            out[root] = Candidate(root, "does not exist")
            continue
        if not root.is_dir():
            out[root] = Candidate(root, _file_reason(root))
            continue
        real_root = root.resolve()
        for dirpath, dirnames, filenames in os.walk(root, followlinks=False):
            d = Path(dirpath)
            for name in dirnames:  # a directory named like a video ("x.mp4") is reported, not entered silently
                if Path(name).suffix.lower() in VIDEO_EXTENSIONS:
                    out[d / name] = Candidate(d / name, "is a directory, not a video file")
            for name in filenames:
                p = d / name
                if p.suffix.lower() not in VIDEO_EXTENSIONS:
                    continue
                out[p] = Candidate(p, (NAME_NOT_UTF8 if not utf8_name(p) else "")
                                   or _symlink_reason(p, real_root) or _file_reason(p))
    return [out[k] for k in sorted(out, key=str)]


# A name Linux allows but no database or JSON file can hold as text (Python keeps the bytes as lone
# surrogates): the file is reported and left alone; renaming it makes it readable.
NAME_NOT_UTF8 = "the file name is not valid UTF-8; rename the file to read it"


def utf8_name(p: os.PathLike | str) -> bool:
    try:
        str(p).encode("utf-8")
        return True
    except UnicodeEncodeError:
        return False


def printable_path(p: os.PathLike | str) -> str:
    """The path for a message line: bytes that are not UTF-8 as \\xNN, control characters escaped."""
    text = os.fsencode(p).decode("utf-8", "backslashreplace")
    return "".join(c if c.isprintable() or c == " " else repr(c)[1:-1] for c in text)


def _file_reason(p: Path) -> str:
    try:
        return not_regular_reason(os.stat(p).st_mode)
    except OSError as e:
        return f"cannot read: {e.strerror}"


def _symlink_reason(p: Path, real_root: Path) -> str:
    if not p.is_symlink():
        return ""
    try:
        target = p.resolve()
    except (RuntimeError, OSError):  # a symlink loop (Python 3.11 raises RuntimeError for it)
        return "symlink loop (the link points back to itself)"
    if not target.exists():
        return "broken symlink"
    if real_root not in target.parents:
        return f"symlink points outside the input folder ({target})"
    return ""

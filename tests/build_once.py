"""Data that several session fixtures (and, under pytest-xdist, several worker processes) need is
built once per pytest run and reused: an `mvp synth` run costs tens of seconds on the 2-core machine.
A fixture that changes what it got
copies it first; the built directory itself is only read.

pytest-xdist's own advice for a session fixture shared by workers is a lock file in the run's
common temp directory (the parent of each worker's basetemp); this is that, with the standard
library's `fcntl.flock` so the tests need no extra package."""
from __future__ import annotations

import fcntl
import os
import shutil
from pathlib import Path
from typing import Callable


def run_dir(tmp_path_factory) -> Path:
    """This run's temp directory, common to every xdist worker (each worker's basetemp is a folder in it)."""
    base = tmp_path_factory.getbasetemp()
    return base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base


def build_once(tmp_path_factory, name: str, build: Callable[[Path], None]) -> Path:
    """The folder NAME in the run's common temp directory, filled by build(folder) by whichever
    process asks first; the others wait on its lock and get the finished folder. A build that raised
    (or a process killed mid-build) leaves no marker, so the next caller starts it again from empty."""
    root = run_dir(tmp_path_factory)
    out, done = root / f"once-{name}", root / f"once-{name}.done"
    with open(root / f"once-{name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)          # released when the file closes
        if not done.exists():
            shutil.rmtree(out, ignore_errors=True)
            out.mkdir()
            build(out)
            done.touch()
    return out

"""The one way tests and benchmarks run the `mvp` command: `python -m app.cli` in a subprocess from the
checkout, with the repository on the path and one thread per process (the 2 shared cores)."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def mvp_env(**extra: str) -> dict:
    """The environment for an `mvp` subprocess: repo on the path, one OpenMP thread, unbuffered output."""
    return dict(os.environ, PYTHONPATH=str(ROOT), OMP_NUM_THREADS="1", PYTHONUNBUFFERED="1", **extra)


def mvp_cmd(*argv) -> list[str]:
    """The argv that runs `mvp *argv` with this interpreter (for Popen, torchrun and the like)."""
    return [sys.executable, "-m", "app.cli", *map(str, argv)]


def run_mvp(*argv, check: bool = True, timeout: float = 600, env: dict | None = None,
            **kw) -> subprocess.CompletedProcess:
    """Run `mvp *argv` to the end; with `check`, a non-zero exit fails with the command's output tails."""
    r = subprocess.run(mvp_cmd(*argv), cwd=ROOT, env=env or mvp_env(), capture_output=True, text=True,
                       timeout=timeout, **kw)
    if check:
        assert r.returncode == 0, f"mvp {' '.join(map(str, argv[:2]))} exited {r.returncode}: " \
                                  f"{r.stdout[-2000:]}{r.stderr[-3000:]}"
    return r

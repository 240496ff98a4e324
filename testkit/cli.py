"""The one way tests and benchmarks run the `mvp` command: `python -m app.cli` in a subprocess from the
checkout, with the repository on the path and one thread per process (the 2 shared cores), or its entry
point in the test's own process where the program around it is not what is tested (`run_mvp_here`)."""
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
        _assert_ok(r)
    return r


def _assert_ok(r: subprocess.CompletedProcess) -> None:
    """A non-zero exit fails the test with the command's output tails."""
    argv = r.args[r.args.index("app.cli") + 1:] if "app.cli" in r.args else r.args[1:]
    assert r.returncode == 0, f"mvp {' '.join(map(str, argv[:2]))} exited {r.returncode}: " \
                              f"{r.stdout[-2000:]}{r.stderr[-3000:]}"


def run_mvp_here(*argv, check: bool = False) -> subprocess.CompletedProcess:
    """`mvp *argv` through the CLI's own entry point (`app.cli.main.main`) in this process, its output
    captured: the same parser, handlers and exit codes as `run_mvp` without a new interpreter's
    torch and transformers import (4-8 s of CPU on the 2 shared cores each; docs/BENCHMARKS.md). For a
    test of what a command does; a test of the `mvp` program itself (its environment, signals, a
    crash) keeps `run_mvp`. An exception the CLI does not turn into an exit code ends as Python would
    end the program: its traceback on stderr and exit status 1. Paths are best absolute: the working
    directory is the test's, not the checkout. `check` as in `run_mvp`."""
    import contextlib
    import io
    import traceback

    import torch

    from app.cli.main import main
    threads = torch.get_num_threads()       # `--threads N` sets the process's count: given back after
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            rc = main([str(a) for a in argv])
        except SystemExit as e:              # argparse's usage errors and the like
            rc = e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
            if isinstance(e.code, str):
                print(e.code, file=sys.stderr)
        except Exception:                    # what the interpreter would print, and its exit status
            traceback.print_exc()
            rc = 1
        finally:
            torch.set_num_threads(threads)
    r = subprocess.CompletedProcess(["mvp", *map(str, argv)], rc, out.getvalue(), err.getvalue())
    if check:
        _assert_ok(r)
    return r

"""CPU a process spends compiling the checkout's own modules, with and without their bytecode on disk.

The checkout is installed editable, so its modules' bytecode lives in its own __pycache__ folders. Where
PYTHONDONTWRITEBYTECODE is set (this project's CI machines set it), no process writes them, so each
`mvp` process the suite starts (servers, jobs, CLI calls) compiles every app/, db/ and mvp_core/ module
it imports from source, again. This measures what writing them once before the suite (`compileall`)
would save each process (docs/BENCHMARKS.md, "Bytecode").

Each run is a new interpreter that first imports the dependencies (torch, transformers, gradio,
SQLAlchemy: their bytecode is installed) and then times only the import of the checkout's modules that
a job or a server imports, so the difference is the compiling alone. Runs alternate: no bytecode, then
bytecode written; medians.

Usage: .venv/bin/python bench/bytecode.py [--repeats 7]"""
from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("app", "db", "mvp_core")
TIMED = ("import time; import torch, transformers, gradio, sqlalchemy, fastapi, pandas, pyarrow\n"
         "from transformers import Qwen2_5_VLForConditionalGeneration\n"
         "t = time.process_time()\n"
         "import app.web.server, app.cli.main, app.cli.model, app.cli.train, mvp_core.model.rollout\n"
         "import mvp_core.train.loop, db.engine, db.models\n"
         "print(time.process_time() - t)")


def clear() -> None:
    for pkg in PACKAGES:
        for d in (ROOT / pkg).rglob("__pycache__"):
            shutil.rmtree(d)


def one() -> float:
    r = subprocess.run([sys.executable, "-c", TIMED], cwd=ROOT, capture_output=True, text=True, check=True,
                       env=dict(os.environ, PYTHONDONTWRITEBYTECODE="1"))
    return float(r.stdout.strip().splitlines()[-1])


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--repeats", type=int, default=7)
    a = ap.parse_args()
    got: dict[str, list[float]] = {"source": [], "bytecode": []}
    try:
        for r in range(a.repeats):
            clear()
            got["source"].append(one())
            subprocess.run([sys.executable, "-m", "compileall", "-q", *PACKAGES], cwd=ROOT, check=True,
                           stdout=subprocess.DEVNULL)
            got["bytecode"].append(one())
            print(f"  repeat {r + 1}: from source {got['source'][-1]:.3f} s, bytecode {got['bytecode'][-1]:.3f} s")
    finally:
        clear()
    src, byte = statistics.median(got["source"]), statistics.median(got["bytecode"])
    print(f"\nCPU importing the checkout's modules of a job and a server (medians of {a.repeats}): from source "
          f"{src:.3f} s, from bytecode {byte:.3f} s ({byte / src:.2f}x); {src - byte:.3f} s saved a process")
    return 0


if __name__ == "__main__":
    sys.exit(main())

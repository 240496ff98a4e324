"""CPU of importing Gradio with its type-stub writing (as Gradio ships) and without it (as `mvp serve`
imports it, app/web/gradio_stubs.py), side by side: each a fresh interpreter, interleaved, the
children's user + system CPU from getrusage. Docs: docs/web.md, "Speed and memory".

    python bench/gradio_import.py [--repeats 7]"""
from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
WAYS = {
    "import gradio (as shipped: stubs re-written)": "import gradio",
    "import gradio (stub writing skipped)": "from app.web import gradio_stubs; gradio_stubs.install(); import gradio",
    "import app.web.server (what mvp serve imports)": "import app.web.server",
}


def cpu_of(code: str) -> float:
    """Seconds of CPU a fresh interpreter spends running `code`."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run([sys.executable, "-c", code], cwd=ROOT, check=True,
                   env=dict(os.environ, PYTHONPATH=str(ROOT), OMP_NUM_THREADS="1"))
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeats", type=int, default=7)
    args = ap.parse_args()
    cpu_of("import gradio")                  # warm the file cache (and write the stubs once, as Gradio does)
    runs = {name: [] for name in WAYS}
    for _ in range(args.repeats):
        for name, code in WAYS.items():      # interleaved: a busier moment slows every way alike
            runs[name].append(cpu_of(code))
    shipped = statistics.median(runs[next(iter(WAYS))])
    print(f"| import | CPU s (median of {args.repeats}) | vs as shipped |")
    print("|---|---:|---:|")
    for name, xs in runs.items():
        med = statistics.median(xs)
        print(f"| {name} | {med:.2f} | {med / shipped:.2f}x |")
    print(f"load average {' '.join(Path('/proc/loadavg').read_text().split()[:3])}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

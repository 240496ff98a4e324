"""The server's CPU at rest: an idle `mvp serve` (a new data directory, no browser open) from this tree
and, with --compare, from an older tree, started side by side; each one's CPU seconds (user + system,
from /proc) over the same --seconds once /login answers. Gradio's queue polls for work while idle (docs/web.md,
"Speed and memory"), so an idle server is not free.

Usage: .venv/bin/python bench/server_idle_cpu.py [--compare OLD_TREE] [--seconds 20]"""
from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from testkit.measure import cpu_seconds, load_avg  # noqa: E402
from testkit.web import free_port  # noqa: E402


def start(tree: Path, data: Path) -> tuple[subprocess.Popen, str]:
    port = free_port()
    proc = subprocess.Popen([sys.executable, "-m", "app.cli", "serve", "--data", str(data), "--port", str(port)],
                            cwd=tree, env=dict(os.environ, PYTHONPATH=str(tree)),
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return proc, f"http://127.0.0.1:{port}/login"


def wait_up(proc: subprocess.Popen, url: str, name: str, timeout_s: float = 120.0) -> None:
    """Return once `url` (the server's /login) answers; exit with one line if the server exits or stays silent."""
    deadline = time.time() + timeout_s
    while time.time() < deadline:
        try:
            urllib.request.urlopen(url, timeout=5)
            return
        except OSError:
            if proc.poll() is not None:
                raise SystemExit(f"{name}: mvp serve exited with {proc.returncode}")
            time.sleep(0.05)
    raise SystemExit(f"{name}: mvp serve did not answer /login in {timeout_s:.0f} s")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--compare", type=Path, help="an older tree, started beside this one")
    ap.add_argument("--seconds", type=float, default=20.0)
    args = ap.parse_args()
    trees = {"current": ROOT, **({"compare": args.compare.resolve()} if args.compare else {})}
    with tempfile.TemporaryDirectory() as td:
        procs = {name: start(tree, Path(td) / name) for name, tree in trees.items()}
        try:
            for name, (proc, url) in procs.items():
                wait_up(proc, url, name)
            time.sleep(2)
            before = {name: cpu_seconds(p.pid) for name, (p, _) in procs.items()}
            time.sleep(args.seconds)
            used = {name: cpu_seconds(p.pid) - before[name] for name, (p, _) in procs.items()}
        finally:
            for proc, _ in procs.values():
                proc.terminate()
                proc.wait(timeout=20)
    for name, s in used.items():
        print(f"{name}: {s:.2f} s of CPU in {args.seconds:.0f} s idle ({100 * s / args.seconds:.1f}% of a core)")
    if "compare" in used and used["current"] > 0:
        print(f"compare / current: {used['compare'] / used['current']:.1f}x")
    print(f"load average: {load_avg()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

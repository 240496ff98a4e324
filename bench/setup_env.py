"""Building an environment from the pins, as the README's commands and CI do (scripts/setup_env.sh): the
shipped script (uv installs the pins) beside the pip command the script ran before (`pip install -r`),
alternately, each into a new venv with a new, empty package cache (a fresh machine downloads everything),
then the script once more with the uv cache it just filled (CI's second environment, built beside the
first). Wall seconds and CPU seconds (the children's user + system) of each; medians and the ratio.

Usage: .venv/bin/python bench/setup_env.py [--kind runtime|dev] [--rounds 2]"""
from __future__ import annotations

import argparse
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from testkit.measure import load_avg  # noqa: E402


def timed(cmd: list[str], env: dict) -> tuple[float, float]:
    """(wall s, CPU s of the command and its children)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t = time.perf_counter()
    subprocess.run(cmd, cwd=ROOT, env=env, check=True, stdout=subprocess.DEVNULL)
    wall = time.perf_counter() - t
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def build(how: str, kind: str, work: Path, cache: Path) -> tuple[float, float]:
    venv = work / f"venv-{how}"
    shutil.rmtree(venv, ignore_errors=True)
    env = dict(os.environ, PIP_CACHE_DIR=str(cache / "pip"), UV_CACHE_DIR=str(cache / "uv"))
    req = "requirements-dev.txt" if kind == "dev" else "requirements.txt"
    if how == "pip":      # the script before: a venv, pip upgraded, the pins, the checkout
        cmds = [["python3", "-m", "venv", str(venv)],
                [str(venv / "bin/pip"), "install", "-q", "--upgrade", "pip"],
                [str(venv / "bin/pip"), "install", "-q", "-r", req],
                [str(venv / "bin/pip"), "install", "-q", "--no-deps", "-e", "."]]
    else:
        cmds = [["env", f"VENV={venv}", "scripts/setup_env.sh", kind]]
    wall = cpu = 0.0
    for cmd in cmds:
        w, c = timed(cmd, env)
        wall, cpu = wall + w, cpu + c
    shutil.rmtree(venv, ignore_errors=True)
    return wall, cpu


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--kind", choices=("runtime", "dev"), default="runtime")
    ap.add_argument("--rounds", type=int, default=2)
    args = ap.parse_args()
    got: dict[str, list[tuple[float, float]]] = {"pip (cold cache)": [], "uv (cold cache)": [],
                                                  "uv (its cache filled)": []}
    before = load_avg()
    with tempfile.TemporaryDirectory(prefix="bench-setup-") as tmp:
        work = Path(tmp)
        for r in range(args.rounds):
            for how in ("pip", "uv"):
                cache = work / f"cache-{how}-{r}"
                got[f"{how} (cold cache)"].append(build(how, args.kind, work, cache))
                if how == "uv":
                    got["uv (its cache filled)"].append(build("uv", args.kind, work, cache))
                shutil.rmtree(cache, ignore_errors=True)
                print(f"round {r + 1} {how}: " + ", ".join(f"{k} {v[-1][0]:.1f} s" for k, v in got.items() if v),
                      flush=True)
    base = statistics.median(w for w, _ in got["pip (cold cache)"])
    print(f"\n{args.kind} environment, {args.rounds} rounds; load average {before} -> {load_avg()}")
    print(f"{'how':24} {'wall s':>8} {'CPU s':>8} {'wall vs pip':>12}")
    for name, runs in got.items():
        wall, cpu = statistics.median(w for w, _ in runs), statistics.median(c for _, c in runs)
        print(f"{name:24} {wall:8.1f} {cpu:8.1f} {wall / base:11.2f}x")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

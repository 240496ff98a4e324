"""The CPU an `mvp serve` start costs until /login answers (every start of the studio, and each of the
test suite's ~30 servers): this tree's server and, with --compare, an older tree's, started alternately
on new data directories; each start's CPU seconds (user + system, from /proc) once /login answers.
Medians of --starts each, and the ratio.

Usage: .venv/bin/python bench/server_start_cpu.py [--compare OLD_TREE] [--starts 5]"""
from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.server_idle_cpu import start, wait_up  # noqa: E402
from testkit.measure import cpu_seconds, load_avg  # noqa: E402


def one_start(tree: Path, data: Path) -> float:
    """CPU seconds of a server from `tree` on the new directory `data` when /login first answers 200."""
    proc, url = start(tree, data)
    try:
        wait_up(proc, url, str(tree))
        return cpu_seconds(proc.pid)
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--compare", type=Path, help="an older tree, started alternately with this one")
    ap.add_argument("--starts", type=int, default=5)
    args = ap.parse_args()
    trees = {"current": ROOT, **({"compare": args.compare.resolve()} if args.compare else {})}
    got: dict[str, list[float]] = {name: [] for name in trees}
    before = load_avg()
    with tempfile.TemporaryDirectory() as td:
        for i in range(args.starts):
            for name, tree in trees.items():
                got[name].append(one_start(tree, Path(td) / f"{name}-{i}"))
                print(f"  start {i + 1} {name}: {got[name][-1]:.2f} s of CPU", flush=True)
    med = {name: statistics.median(xs) for name, xs in got.items()}
    print(f"\nCPU seconds until /login answered (median of {args.starts}; load average {before} -> {load_avg()}):")
    for name, m in med.items():
        ratio = f"  {m / med['compare']:.2f}x the compared tree's" if "compare" in med and name != "compare" else ""
        print(f"  {name:8s} {m:5.2f} s  [{min(got[name]):.2f}, {max(got[name]):.2f}]{ratio}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

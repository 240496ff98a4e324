"""The test suite's wall time, the old way beside the new: the whole suite in one process (as scripts/test.sh
ran it before), in N pytest-xdist workers ("parallel"; scripts/test.sh runs 2), in 2 workers ("two": beside
another N, e.g. `--variants parallel,two --workers 3`), the same with every file its own work unit ("files":
before the files sharing a session studio went to one worker) and the fast subset (`scripts/test.sh --fast`).
Each is pytest's own run from this checkout; the line per variant gives minutes, the pass/fail counts and
the load average around it (the 2-core machine is often shared; read minutes beside it).

Usage: .venv/bin/python bench/suite_time.py [--variants serial,parallel,two,files,fast] [--workers 2] [--json OUT]
       [--costs]
--costs also rewrites testkit/suite_costs.json from the parallel run's per-file seconds (the order in which
tests/conftest.py hands files to the workers: longest first). Run scripts/setup_tests.sh first (the runs
time pytest only, not the setup). The serial suite alone took 21 min on the idle 2-core machine
(docs/BENCHMARKS.md, "The demo" row); the whole set takes the sum of its runs."""
from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from testkit.measure import load_avg  # noqa: E402
from testkit.suite_order import COSTS, costs_from_junit  # noqa: E402

FAST = ["-m", "not slow and not browser and not serve"]      # scripts/test.sh --fast


def variants(workers: int) -> dict[str, list[str]]:
    par = _xdist(workers)
    return {"serial": [], "parallel": par, "two": _xdist(2), "files": par, "fast": FAST + par}


def _xdist(workers: int) -> list[str]:
    return ["-n", str(workers), "--dist", "loadfile"]


# "files": the parallel run with every file its own work unit, as before the files sharing a session
# studio went to one worker (testkit/suite_groups.py)
ENV = {"files": {"MVP_SUITE_UNITS": "files"}}


def run(extra: list[str], junit: Path | None = None, env: dict | None = None) -> dict:
    cmd = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *extra]
    if junit is not None:
        cmd.append(f"--junitxml={junit}")
    before, t0 = load_avg(), time.perf_counter()
    r = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, env={**os.environ, **(env or {})})
    wall = time.perf_counter() - t0
    tail = r.stdout.strip().splitlines()[-1] if r.stdout.strip() else r.stderr[-300:]
    counts = {k: int(n) for n, k in re.findall(r"(\d+) (passed|failed|error|errors|skipped|deselected)", tail)}
    return {"cmd": " ".join(cmd[1:]), "wall_min": round(wall / 60, 2), "rc": r.returncode, "counts": counts,
            "load_before": before, "load_after": load_avg(), "summary": tail}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--variants", default="serial,parallel,fast")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--json", type=Path, help="also write the results here")
    ap.add_argument("--costs", action="store_true", help="rewrite testkit/suite_costs.json from the parallel run")
    args = ap.parse_args(argv)
    table = variants(args.workers)
    names = [v.strip() for v in args.variants.split(",") if v.strip()]
    unknown = [v for v in names if v not in table]
    if unknown:
        print(f"error: unknown variant(s) {', '.join(unknown)}; choose from {', '.join(table)}", file=sys.stderr)
        return 2
    results = {}
    for name in names:
        junit = Path(tempfile.mkdtemp()) / "junit.xml" if args.costs and name == "parallel" else None
        results[name] = res = run(table[name], junit, ENV.get(name))
        if junit is not None and res["rc"] == 0:
            COSTS.write_text(json.dumps(costs_from_junit(junit), indent=1) + "\n")
            print(f"wrote {COSTS.relative_to(ROOT)} (the longest: {next(iter(costs_from_junit(junit)))})")
        print(f"{name:9s} {res['wall_min']:6.2f} min  {res['summary']}  (load {res['load_before']} -> "
              f"{res['load_after']})", flush=True)
    for other in ("serial", "two", "files"):
        if other in results and "parallel" in results:
            print(f"parallel / {other}: {results['parallel']['wall_min'] / results[other]['wall_min']:.2f}x")
    if args.json:
        args.json.write_text(json.dumps(results, indent=2))
    return 0 if all(r["rc"] == 0 for r in results.values()) else 1


if __name__ == "__main__":
    raise SystemExit(main())

"""Durability and verdict latency of the web app under load, against SQLite and PostgreSQL: the
harness is testkit/durability.py (shared with tests/test_security_durability.py); this script runs it at
full size and prints the table that docs/BENCHMARKS.md records.

Usage: python bench/web_durability.py [--engine sqlite|postgresql|both] [--curators 20] [--seconds 40]
       [--data DIR]   (DIR: a synthesized data directory; default: synthesize the sample videos)"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from testkit.durability import prepare, run  # noqa: E402
from testkit.measure import load_avg, synth_source  # noqa: E402


def main() -> int:
    import tempfile
    ap = argparse.ArgumentParser()
    ap.add_argument("--engine", choices=["sqlite", "postgresql", "both"], default="both")
    ap.add_argument("--curators", type=int, default=20)
    ap.add_argument("--seconds", type=float, default=40.0)
    ap.add_argument("--puzzles", type=int, default=20000)
    ap.add_argument("--data", type=Path, default=None, help="a synthesized data directory (has puzzles.jsonl)")
    args = ap.parse_args()
    engines = ["sqlite", "postgresql"] if args.engine == "both" else [args.engine]
    results = {}
    with tempfile.TemporaryDirectory() as td:
        tmp = Path(td)
        src = args.data or synth_source(tmp)
        for eng in engines:
            url, users, admin = prepare(src, tmp / eng / "data", eng, args.puzzles, args.curators)
            print(f"{eng}: {args.curators} curators for {args.seconds:.0f} s, kill -9 + restart mid-run", flush=True)
            results[eng] = run(tmp / eng / "data", url, users, admin, args.seconds)
            print(json.dumps(results[eng]), flush=True)
            if eng == "postgresql":
                from testkit.store import drop_pg_database
                drop_pg_database(url)
    keys = ["acknowledged", "lost", "duplicated_events", "puzzles_over_k", "requests_failed_during_restart",
            "wal_deleted_under_server", "verdict_p50_ms", "verdict_p95_ms", "verdicts_per_s"]
    print("\n" + f"{'':32}" + "".join(f"{e:>14}" for e in results))
    for k in keys:
        print(f"{k:32}" + "".join(f"{str(results[e][k]):>14}" for e in results))
    print(f"load average: {load_avg()}")
    return 0 if all(r["lost"] == 0 and r["duplicated_events"] == 0 and r["puzzles_over_k"] == 0
                    for r in results.values()) else 1


if __name__ == "__main__":
    sys.exit(main())

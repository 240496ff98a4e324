"""p50/p95 of db.review.next_puzzle with 100k puzzles in the database, SQLite and PostgreSQL.

State before timing: 100k puzzles, 20 curators, 80% of the puzzles already reviewed (k=1), each
curator has skipped 20 puzzles, and the other 19 curators hold live leases. Then one curator takes
`--calls` puzzles in a row (next_puzzle timed alone; the verdict that follows is not timed).

`--baseline FILE` (a copy of an older db/review/queue.py) times its next_puzzle side by side: the calls
alternate between the two implementations on the same database and curator, so both see the same load.

Usage: .venv/bin/python bench/store_next_puzzle.py [--engines sqlite,postgresql] [--puzzles 100000]
       [--baseline /tmp/review_before.py]"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from sqlalchemy import insert, text  # noqa: E402


def _load(path: str):
    import importlib.util
    spec = importlib.util.spec_from_file_location("review_baseline", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _stats(times: list[float]) -> dict:
    times = sorted(times)
    return {"p50_ms": round(statistics.median(times), 2), "p95_ms": round(times[int(0.95 * len(times)) - 1], 2),
            "max_ms": round(times[-1], 2)}


def run(kind: str, n: int, calls: int, baseline: str | None = None) -> dict:
    from sqlalchemy.orm import sessionmaker

    from bench.store_common import add_puzzles, add_users, scratch_db
    from db import review
    from db.engine import make_engine
    from db.models.curation import PuzzleVerdict
    with scratch_db(kind) as url:
        eng = make_engine(url)
        t0 = time.perf_counter()
        ids = add_puzzles(eng, n)
        users = add_users(eng, 20)
        done = ids[: int(n * 0.8)]
        with eng.begin() as c:   # bulk "already reviewed" state, kept consistent with review_state
            c.execute(insert(PuzzleVerdict), [{"puzzle_id": p, "user_id": users[i % 19 + 1], "verdict": "accept",
                                               "reason": "", "seconds": 1.0} for i, p in enumerate(done)])
            c.execute(text("UPDATE review_state SET n_reviews = 1, n_accept = 1, status = 'accepted' "
                           "WHERE puzzle_id IN (SELECT puzzle_id FROM puzzle_verdicts)"))
            rest = ids[int(n * 0.8):]
            c.execute(insert(PuzzleVerdict), [{"puzzle_id": p, "user_id": users[0], "verdict": "skip",
                                               "reason": "", "seconds": 1.0} for p in rest[:20]])
        if kind == "postgresql":   # what autovacuum does on a live server after a bulk load
            with eng.connect().execution_options(isolation_level="AUTOCOMMIT") as c:
                c.execute(text("ANALYZE"))
        setup = time.perf_counter() - t0
        Session = sessionmaker(eng, expire_on_commit=False)
        with Session() as s:
            for u in users[1:]:
                review.next_puzzle(s, u)
            impls = [review.next_puzzle] + ([_load(baseline).next_puzzle] if baseline else [])
            times: list[list[float]] = [[] for _ in impls]
            for i in range(calls * len(impls)):
                j = i % len(impls)
                t = time.perf_counter()
                p = impls[j](s, users[0])
                times[j].append((time.perf_counter() - t) * 1000)
                review.submit_verdict(s, users[0], p, "accept", seconds=1.0)
        eng.dispose()
    out = {"engine": kind, "puzzles": n, "calls": calls, "setup_s": round(setup, 1), **_stats(times[0])}
    if baseline:
        out["baseline"] = _stats(times[1])
    return out


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--engines", default="sqlite,postgresql")
    ap.add_argument("--puzzles", type=int, default=100_000)
    ap.add_argument("--calls", type=int, default=300)
    ap.add_argument("--baseline", default=None, help="an older db/review/queue.py to time side by side")
    a = ap.parse_args()
    ok = True
    for kind in a.engines.split(","):
        r = run(kind, a.puzzles, a.calls, a.baseline)
        print(r, "load average %.1f %.1f %.1f" % os.getloadavg(), flush=True)
        ok &= r["p95_ms"] < 20
    print("PASS (p95 < 20 ms)" if ok else "FAIL (p95 >= 20 ms)")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())

"""next_puzzle and peek_next under the queue filter, 100k puzzles, SQLite and PostgreSQL.

State: 100k synthetic puzzles over 50 videos (2,000 each: the worst case for a video filter), 80%
already reviewed by another curator. For each filter one curator claims up to --calls puzzles in a
row (claim and peek timed; every third one skipped, the rest accepted, not timed).

Usage: .venv/bin/python bench/store_queue_filter.py [--engines sqlite,postgresql] [--calls 40]"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

FILTERS = [{}, {"video": "v000000000000007"}, {"kind": "random", "min_difficulty": 0.9},
           {"status": "skipped"}, {"status": "accepted"}]


def run(kind: str, calls: int) -> None:
    from sqlalchemy import insert, text
    from sqlalchemy.orm import sessionmaker

    from bench.store_common import add_puzzles, add_users, scratch_db
    from db import review
    from db.engine import make_engine
    from db.models.curation import PuzzleVerdict
    from db.review.queue_rule import QueueFilter
    with scratch_db(kind) as url:
        eng = make_engine(url)
        ids = add_puzzles(eng, 100_000)
        users = add_users(eng, 2)
        with eng.begin() as c:
            c.execute(insert(PuzzleVerdict), [{"puzzle_id": p, "user_id": users[1], "verdict": "accept",
                                               "reason": "", "seconds": 1.0} for p in ids[:80_000]])
            c.execute(text("UPDATE review_state SET n_reviews = 1, n_accept = 1, status = 'accepted' "
                           "WHERE puzzle_id IN (SELECT puzzle_id FROM puzzle_verdicts)"))
        if kind == "postgresql":
            with eng.connect().execution_options(isolation_level="AUTOCOMMIT") as c:
                c.execute(text("ANALYZE"))
        Session = sessionmaker(eng, expire_on_commit=False)
        for f in FILTERS:
            filt = QueueFilter(**f)
            claim, peek = [], []
            with Session() as s:
                for i in range(calls):
                    t = time.perf_counter()
                    p = review.next_puzzle(s, users[0], filt=filt)
                    claim.append((time.perf_counter() - t) * 1000)
                    t = time.perf_counter()
                    review.peek_next(s, users[0], p, filt=filt)
                    peek.append((time.perf_counter() - t) * 1000)
                    if p is None:
                        break
                    review.submit_verdict(s, users[0], p, "skip" if i % 3 == 0 else "accept", seconds=1.0)
            print(f"{kind} filter={f or 'none'} calls={len(claim)} claim median {statistics.median(claim):.2f} ms "
                  f"max {max(claim):.2f} | peek median {statistics.median(peek):.2f} ms max {max(peek):.2f} | "
                  "load average %.1f %.1f %.1f" % os.getloadavg(), flush=True)
        eng.dispose()


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--engines", default="sqlite,postgresql")
    ap.add_argument("--calls", type=int, default=40)
    a = ap.parse_args()
    for kind in a.engines.split(","):
        run(kind, a.calls)
    return 0


if __name__ == "__main__":
    sys.exit(main())

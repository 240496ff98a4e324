"""The claim that finds nothing: what `sync_queue` (db/review/queue.py) costs at 100k puzzles.

Every claim that finds no puzzle (a curator at the end of a filtered queue) calls `sync_queue`, which
repairs databases made without the queue trigger. Timed side by side in one run: the anti-join
insert it runs when a row is missing, and the count check that now decides whether to run it.

Usage: .venv/bin/python bench/store_empty_claim.py [--engines sqlite,postgresql] [--calls 15]"""
from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))


def _timed(Session, fn, calls: int) -> float:
    ts = []
    for _ in range(calls):
        with Session() as s:
            t = time.perf_counter()
            fn(s)
            ts.append((time.perf_counter() - t) * 1000)
            s.rollback()
    return statistics.median(ts)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--engines", default="sqlite,postgresql")
    ap.add_argument("--calls", type=int, default=15)
    args = ap.parse_args()
    from sqlalchemy import exists, func, literal, select
    from sqlalchemy.orm import sessionmaker

    from bench.store_common import add_puzzles, scratch_db
    from db.engine import make_engine
    from db.models import Puzzle
    from db.models.curation import ReviewState
    from db.review.queue import sync_queue

    def anti_join(s):     # the repair's own query, run even when nothing is missing (the old path)
        s.execute(select(Puzzle.id, literal(0)).where(~exists().where(ReviewState.puzzle_id == Puzzle.id))).all()
    for kind in args.engines.split(","):
        with scratch_db(kind) as url:
            eng = make_engine(url)
            add_puzzles(eng, 100_000)
            S = sessionmaker(eng)
            old, new = _timed(S, anti_join, args.calls), _timed(S, sync_queue, args.calls)
            print(f"{kind}: anti-join {old:.1f} ms, sync_queue now {new:.1f} ms (median of {args.calls}); "
                  f"ratio {old / new:.1f}x")


if __name__ == "__main__":
    main()

"""20 concurrent curators (threads, then processes) making 2,000 verdicts through db.review, on SQLite
and PostgreSQL. Checks: 0 lost (every verdict a caller got back is stored, and the history has one
event per verdict), 0 duplicated (with k=1 no puzzle was handed to or judged by two curators), no
"database is locked" reaching a caller. Prints verdicts/s per engine and mode.

Usage: .venv/bin/python bench/store_concurrency.py [--engines sqlite,postgresql] [--curators 20]
       [--verdicts 2000] [--modes threads,processes]"""
from __future__ import annotations

import argparse
import multiprocessing as mp
import sys
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from sqlalchemy import func, select, text  # noqa: E402


def curator(url: str, user_id: int, quota: int, out, barrier) -> None:
    """One curator: next_puzzle -> verdict, `quota` times. Appends (user, puzzle) pairs and errors."""
    from sqlalchemy.orm import sessionmaker

    from db import review
    from db.engine import make_engine
    eng = make_engine(url, pool_size=2)
    Session = sessionmaker(eng, expire_on_commit=False)
    done, errors = [], []
    with eng.connect():
        pass                      # connected and imported: wait for the others, then go together
    barrier.wait()
    with Session() as s:
        for i in range(quota):
            try:
                p = review.next_puzzle(s, user_id)
                if p is None:
                    break
                review.submit_verdict(s, user_id, p, "accept" if i % 4 else "reject", seconds=1.0)
                done.append(p)
            except Exception as e:   # noqa: BLE001  (counted and reported: must stay 0)
                errors.append(f"{type(e).__name__}: {e}"[:200])
    eng.dispose()
    out.put((user_id, done, errors)) if hasattr(out, "put") else out.append((user_id, done, errors))


def run(kind: str, mode: str, n_cur: int, n_verdicts: int) -> dict:
    from bench.store_common import add_puzzles, add_users, scratch_db
    from db.engine import make_engine
    from db.models.curation import PuzzleVerdict, ReviewState, VerdictEvent
    with scratch_db(kind) as url:
        eng = make_engine(url)
        add_puzzles(eng, int(n_verdicts * 1.2))
        users = add_users(eng, n_cur)
        quota = n_verdicts // n_cur
        # The clock starts when every curator is connected (process start-up is not counted).
        if mode == "threads":
            results: list = []
            barrier = threading.Barrier(n_cur + 1)
            ts = [threading.Thread(target=curator, args=(url, u, quota, results, barrier)) for u in users]
            [t.start() for t in ts]
            barrier.wait()
            t0 = time.perf_counter()
            [t.join() for t in ts]
        else:
            ctx = mp.get_context("spawn")
            q = ctx.Queue()
            barrier = ctx.Barrier(n_cur + 1)
            ps = [ctx.Process(target=curator, args=(url, u, quota, q, barrier)) for u in users]
            [p.start() for p in ps]
            barrier.wait()
            t0 = time.perf_counter()
            results = [q.get() for _ in ps]
            [p.join() for p in ps]
        dt = time.perf_counter() - t0
        returned = [(u, p) for u, done, _ in results for p in done]
        errors = [e for _, _, errs in results for e in errs]
        with eng.connect() as c:
            stored = set(tuple(r) for r in c.execute(select(PuzzleVerdict.user_id, PuzzleVerdict.puzzle_id)))
            n_events = c.scalar(select(func.count()).select_from(VerdictEvent))
            max_reviews = c.scalar(select(func.max(ReviewState.n_reviews)))
            multi = c.scalar(text("SELECT count(*) FROM (SELECT puzzle_id FROM puzzle_verdicts "
                                  "GROUP BY puzzle_id HAVING count(*) > 1) x"))
        eng.dispose()
        lost = len(set(returned) - stored)
        return {"engine": kind, "mode": mode, "curators": n_cur, "verdicts": len(returned), "stored": len(stored),
                "events": n_events, "lost": lost, "duplicated": multi + (len(returned) - len(set(returned))),
                "max_reviews_per_puzzle": max_reviews, "errors": len(errors),
                "locked_errors": sum("locked" in e for e in errors), "seconds": round(dt, 2),
                "verdicts_per_s": round(len(returned) / dt, 1), "first_error": errors[0] if errors else ""}


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--engines", default="sqlite,postgresql")
    ap.add_argument("--modes", default="threads,processes")
    ap.add_argument("--curators", type=int, default=20)
    ap.add_argument("--verdicts", type=int, default=2000)
    a = ap.parse_args()
    ok = True
    for kind in a.engines.split(","):
        for mode in a.modes.split(","):
            r = run(kind, mode, a.curators, a.verdicts)
            print(r, flush=True)
            ok &= r["lost"] == 0 and r["duplicated"] == 0 and r["errors"] == 0 and r["verdicts"] == a.verdicts
    print("PASS" if ok else "FAIL")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())

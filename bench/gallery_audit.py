"""The shortcut audit per puzzle at the size of real work: 100,000 puzzles, SQLite and PostgreSQL.
Times what `mvp audit --db` and the Data page add to an audit run (db/puzzles/audit_results.py
store_results: 100,000 puzzles x 7 solvers = 700,000 rows, first run and a rerun replacing them)
and the gallery's audit flag (db/review/gallery.py: the first page of cards for each flag, p95 over
--repeats). The audit's own solver work (reading frames) is not in these figures.

Usage: .venv/bin/python bench/gallery_audit.py [--engines sqlite,postgresql] [--repeats 10]"""
from __future__ import annotations

import argparse
import os
import random
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
N = 100_000
FLAGS = ["any", "none", "unaudited", "boundary", "jpeg_size"]


def results(ids: list[str], seed: int):
    """Every solver's result on every puzzle: boundary solves one in 5, the others one in 50."""
    from mvp_core.synth.audit import SOLVERS, PuzzleResult
    rng = random.Random(seed)
    return [PuzzleResult(p, n, float(rng.random() < (0.2 if n == "boundary" else 0.02)), rng.random())
            for p in ids for n in SOLVERS]


def timed(fn):
    t = time.perf_counter()
    out = fn()
    return (time.perf_counter() - t) * 1000, out


def run(kind: str, repeats: int) -> None:
    from sqlalchemy import text, update
    from sqlalchemy.orm import sessionmaker

    from bench.store_common import add_puzzles, scratch_db
    from bench.web_gallery import record
    from db.engine import make_engine
    from db.models import Puzzle
    from db.puzzles.audit_results import store_results
    from db.review import gallery
    from testkit.measure import load_avg, percentile
    with scratch_db(kind) as url:
        eng = make_engine(url)
        ids = add_puzzles(eng, N)
        with eng.begin() as c:
            c.execute(update(Puzzle).values(record_json=record()))
        Session = sessionmaker(eng, expire_on_commit=False)
        first, second = results(ids, 0), results(ids, 1)
        with Session() as s:
            t_first, n = timed(lambda: store_results(s, first))
            t_again, _ = timed(lambda: store_results(s, second))
            assert n == N
        if kind == "postgresql":
            with eng.connect().execution_options(isolation_level="AUTOCOMMIT") as c:
                c.execute(text("ANALYZE"))
        # a tenth not audited: the "unaudited" flag has something to find
        with Session() as s:
            from sqlalchemy import delete

            from db.models.audit import PuzzleAudit
            from db.puzzles.audit_results import summary_update
            s.execute(delete(PuzzleAudit).where(PuzzleAudit.puzzle_id >= ids[-N // 10]))
            s.execute(summary_update(ids[-N // 10:]))
            s.commit()

        def page(flag: str) -> int:
            with Session() as s:
                return gallery.gallery_page(s, gallery.parse_query({"audit": flag}))["total"]
        per, allx = {}, []
        for flag in FLAGS:
            xs = [timed(lambda: page(flag))[0] for _ in range(repeats)]
            allx += xs
            per[flag] = (round(sorted(xs)[len(xs) // 2]), round(percentile(xs, 0.95)), page(flag))
        print(f"{kind}: {N} puzzles x 7 solvers | store_results first run {t_first / 1000:.2f} s, rerun "
              f"(replacing) {t_again / 1000:.2f} s | audit flag first page p95 {percentile(allx, 0.95):.0f} ms over "
              f"{len(allx)} | load average {load_avg()}", flush=True)
        print(f"  per flag (median ms, p95 ms, puzzles matched): {per}", flush=True)
        eng.dispose()


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--engines", default="sqlite,postgresql")
    ap.add_argument("--repeats", type=int, default=10)
    a = ap.parse_args()
    os.environ.setdefault("MVP_QUIET", "1")
    for kind in a.engines.split(","):
        run(kind, a.repeats)
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""The gallery at the size of real work: 100,000 puzzles and 100,000 stored answers, SQLite and
PostgreSQL. Times what the gallery's API does for a request (the query layer, db/review/gallery.py,
plus the cards' HTML from their template): the first page, filter and sort changes (p95 over
--repeats of each), and a bulk accept and a bulk tag on 10,000 puzzles with their undo
(db/review/bulk.py). The browser's own paint is not in these figures (48 cards: tens of ms).
On PostgreSQL the store is vacuumed and analyzed after the bulk actions and before the page timings,
as autovacuum would be by then. Beside the wall-clock figures, the CPU time spent: this process's
(all of SQLite's work, the query layer's and the HTML's) and the PostgreSQL server's for this
database (from /proc), which the load of a shared machine moves far less than the wall clock.

Usage: .venv/bin/python bench/web_gallery.py [--engines sqlite,postgresql] [--repeats 10]"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
N, BULK = 100_000, 10_000

# filters and sorts a curator changes to, each timed --repeats times (the tag exists once the bench
# has tagged; the run's answers are one per puzzle, right on every third)
CHANGES = [{"status": ["pending"]}, {"video": ["v000000000000007"]}, {"kind": ["random"]},
           {"tag": ["bench"]}, {"sort": "video"}, {"sort": "reviews", "desc": True}, {"q": "p00000000000000123"},
           {"curator": "curator00"}, {"run": "bench-run", "model": "right"}, {"status": ["accepted"], "sort": "video"},
           {"offset": 50_000}]


def record() -> str:
    """One valid puzzle record (8 frames, 2 masked, 7 options) for every synthetic puzzle's card."""
    frames = [{"t": float(i), "uri": f"frames/bench/{i}.jpg"} for i in range(8)]
    opts = [{"label": lab, "uri": f"frames/bench/o{j}.jpg", "t": float(j), "source_video_id": "v", "kind":
             "target" if j < 2 else "neighbor", "difficulty": 0.5} for j, lab in enumerate("ABCDEFG")]
    return json.dumps({"id": "bench", "video": {"id": "v", "path": "/videos/v.mp4", "sha256": "0" * 64, "fps": 25.0,
                                                "duration_s": 60.0, "width": 1280, "height": 720},
                       "frames": frames, "mask": {"start": 3, "length": 2}, "options": opts, "answer": ["A", "B"]})


def timed(fn):
    t = time.perf_counter()
    out = fn()
    return (time.perf_counter() - t) * 1000, out


def server_cpu_ms(eng) -> float:
    """CPU time so far of the PostgreSQL server processes serving this database (from /proc: the
    bench runs on the server's machine); 0 on SQLite, whose work is in this process."""
    if eng.dialect.name != "postgresql":
        return 0.0
    from sqlalchemy import text

    from testkit.measure import cpu_seconds
    with eng.connect() as c:
        pids = c.execute(text("SELECT pid FROM pg_stat_activity WHERE datname = current_database()")).scalars()
        total = 0.0
        for pid in pids:
            try:
                total += cpu_seconds(pid)
            except (OSError, ValueError):
                pass
    return total * 1000


def cpu_timed(eng, fn):
    """(wall ms, this process's CPU ms, the server's CPU ms, fn's result)."""
    c0, s0 = time.process_time(), server_cpu_ms(eng)
    ms, out = timed(fn)
    return ms, (time.process_time() - c0) * 1000, server_cpu_ms(eng) - s0, out


def run(kind: str, repeats: int) -> None:
    from sqlalchemy import insert, text, update
    from sqlalchemy.orm import sessionmaker

    from app.web.pages.gallery.page import grid_html
    from bench.store_common import add_puzzles, add_users, scratch_db
    from db.engine import make_engine
    from db.models import Puzzle
    from db.models.curation import User
    from db.models.runs import Rollout, Run
    from db.review import gallery
    from db.review.bulk import bulk_action, undo_batch
    from testkit.measure import load_avg, percentile
    with scratch_db(kind) as url:
        eng = make_engine(url)
        ids = add_puzzles(eng, N)
        users = add_users(eng, 2)
        with eng.begin() as c:
            c.execute(update(Puzzle).values(record_json=record()))
            c.execute(update(User).where(User.id == users[1]).values(role="admin"))
            c.execute(insert(Run), [{"id": "bench-run", "name": "bench", "kind": "rollout", "model_path": "m",
                                     "config": {}, "status": "done", "dir": ""}])
            c.execute(insert(Rollout), [{"run_id": "bench-run", "puzzle_id": p, "sample_index": 0, "completion": "",
                                         "chosen_labels": [], "format": 1.0, "selection": 1.0, "order": 1.0,
                                         "exact": float(i % 3 == 0), "total": 1.0} for i, p in enumerate(ids)])
        if kind == "postgresql":
            with eng.connect().execution_options(isolation_level="AUTOCOMMIT") as c:
                c.execute(text("ANALYZE"))
        Session = sessionmaker(eng, expire_on_commit=False)

        cpu: list[float] = []

        def page(q: dict) -> None:
            c0 = time.process_time()
            with Session() as s:
                gq = gallery.parse_query(q)
                out = gallery.gallery_page(s, gq)
                grid_html(out["rows"], gq.offset)
            cpu.append((time.process_time() - c0) * 1000)

        with Session() as s:
            admin = users[1]
            t_accept, cpu_accept, srv_accept, res = cpu_timed(
                eng, lambda: bulk_action(s, admin, ids[:BULK], "accept", reason="bench"))
            t_undo, cpu_undo, srv_undo, undone = cpu_timed(eng, lambda: undo_batch(s, admin, res["batch_id"]))
            assert res["n_changed"] == BULK and undone["n_restored"] == BULK
            bulk_action(s, admin, ids[:BULK], "accept", reason="bench")       # stays: status filters find them
            t_tag, tres = timed(lambda: bulk_action(s, users[0], ids[BULK:2 * BULK], "tag", tag="bench"))
            t_untag, _ = timed(lambda: undo_batch(s, users[0], tres["batch_id"]))
            bulk_action(s, users[0], ids[BULK:2 * BULK], "tag", tag="bench")
            t_all, all_ids = timed(lambda: gallery.matching_ids(s, gallery.parse_query({"tag": ["bench"]})))
            assert len(all_ids) == BULK
        if kind == "postgresql":
            # what autovacuum does within a minute of these writes (statistics of the tags just made,
            # the visibility map that lets a count read an index alone), done now, not left to chance
            with eng.connect().execution_options(isolation_level="AUTOCOMMIT") as c:
                c.execute(text("VACUUM ANALYZE"))
        first, _ = timed(lambda: page({}))
        warm = [timed(lambda: page({}))[0] for _ in range(repeats)]
        changes, worst = [], {}
        cpu.clear()
        srv0 = server_cpu_ms(eng)
        for q in CHANGES:
            xs = [timed(lambda: page(q))[0] for _ in range(repeats)]
            changes += xs
            worst[json.dumps(q)] = round(percentile(xs, 0.95), 1)
        srv = (server_cpu_ms(eng) - srv0) / len(changes)
        print(f"{kind}: {N} puzzles, {N} answers | first page {first:.0f} ms (then median "
              f"{sorted(warm)[len(warm) // 2]:.0f} ms) | filter/sort change p95 {percentile(changes, 0.95):.0f} ms "
              f"over {len(changes)} (CPU a request: here median {sorted(cpu)[len(cpu) // 2]:.0f} ms, max "
              f"{max(cpu):.0f}; server mean {srv:.0f} ms) | bulk accept {BULK} {t_accept / 1000:.2f} s "
              f"(CPU here {cpu_accept / 1000:.2f} s, server {srv_accept / 1000:.2f} s), undo {t_undo / 1000:.2f} s "
              f"(CPU here {cpu_undo / 1000:.2f} s, server {srv_undo / 1000:.2f} s) | "
              f"bulk tag {t_tag / 1000:.2f} s, undo {t_untag / 1000:.2f} s | all that match ({BULK}) {t_all:.0f} ms | "
              f"load average {load_avg()}", flush=True)
        print(f"  p95 per change (ms): {worst}", flush=True)
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

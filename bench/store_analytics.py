"""Each analytics question over 1M option verdicts: cold (first call in a process: pulls everything),
warm (no new rows) and after 1,000 new verdict events (incremental pull). Target: warm < 1 s.

Data: 100k synthetic puzzles (7 options, 5 distractors), 20 curators; two curators judge each puzzle
and reject each distractor with probability 0.5 (1,000,000 option-verdict events), plus 100k
rollouts. Written straight into the history table and the current option verdicts (what the review
API writes; the cold first call reads the option verdicts from the current table).

`--baseline FILE` (a copy of an older db/analytics.py) times its questions side by side, alternating
call by call with the current module on the same database (each module keeps its own DuckDB cache).

Usage: .venv/bin/python bench/store_analytics.py [--engines sqlite] [--puzzles 100000]
       [--baseline /tmp/analytics_before.py]"""
from __future__ import annotations

import argparse
import json
import os
import random
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from sqlalchemy import insert, text  # noqa: E402


def fill(eng, n: int) -> None:
    from bench.store_common import add_puzzles, add_users
    from db.models.curation import OptionVerdict, VerdictEvent
    from db.models.runs import Rollout, Run
    ids = add_puzzles(eng, n)
    users = add_users(eng, 20)
    rng = random.Random(1)
    with eng.connect() as c:
        labels = {}
        for oid, pid, lab, kind in c.execute(text("SELECT id, puzzle_id, label, kind FROM options")):
            labels.setdefault(pid, []).append((lab, kind, oid))
    batch, current = [], []
    for i, pid in enumerate(ids):
        for u in (users[i % 20], users[(i + 7) % 20]):
            v = "accept" if rng.random() < 0.7 else "reject"
            batch.append({"user_id": u, "puzzle_id": pid, "label": None, "action": "set", "before": None,
                          "after": {"verdict": v, "reason": "", "seconds": round(rng.uniform(2, 30), 1)}})
            for lab, kind, oid in labels[pid]:
                if kind != "target":
                    rej = rng.random() < 0.5
                    after = {"verdict": "reject" if rej else "keep",
                             "reason_code": "near_duplicate" if rej else None, "note": ""}
                    batch.append({"user_id": u, "puzzle_id": pid, "label": lab, "action": "set", "before": None,
                                  "after": after})
                    current.append({"puzzle_id": pid, "option_id": oid, "label": lab, "user_id": u} | after)
        if len(batch) >= 50_000 or i == len(ids) - 1:
            with eng.begin() as c:   # the history and the current option verdicts, as the review API writes
                c.execute(insert(VerdictEvent), batch)
                c.execute(insert(OptionVerdict), current)
            batch, current = [], []
    with eng.begin() as c:
        c.execute(insert(Run), [{"id": "r1", "name": "r1", "kind": "rollout", "model_path": "m", "set_name": None,
                                 "config": {}, "status": "done", "dir": ""}])
        c.execute(insert(Rollout), [{"run_id": "r1", "checkpoint_id": None, "puzzle_id": pid, "sample_index": 0,
                                     "completion": "", "chosen_labels": rng.sample("ABCDEFG", 2), "format": 1.0,
                                     "selection": 0.5, "order": 0.0, "exact": 0.0, "total": 0.25} for pid in ids])


def _load(path: str):
    import importlib.util
    spec = importlib.util.spec_from_file_location("analytics_baseline", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _timed(fn, *a):
    t = time.perf_counter()
    out = fn(*a)
    return time.perf_counter() - t, out


def run(kind: str, n: int, baseline: str | None = None) -> list[dict]:
    from bench.store_common import scratch_db
    from db import analytics
    from db.engine import make_engine
    from db.models.curation import VerdictEvent
    out = []
    with scratch_db(kind) as url:
        eng = make_engine(url)
        t = time.perf_counter()
        fill(eng, n)
        with eng.connect() as c:
            n_ov = c.scalar(text("SELECT count(*) FROM verdict_events WHERE label IS NOT NULL"))
        print(f"{kind}: filled {n_ov} option verdict events in {time.perf_counter() - t:.1f}s", flush=True)
        mods = {"new": analytics} | ({"baseline": _load(baseline)} if baseline else {})
        for tag, mod in mods.items():
            cold, _ = _timed(mod.acceptance_by_kind, eng)
            print(f"{kind}: {tag}: cold first call (pull everything) {cold:.2f}s", flush=True)
        for name in analytics.QUESTIONS:
            warm = {tag: [] for tag in mods}
            rows = {}
            for _ in range(3):
                for tag, mod in mods.items():
                    dt, rows[tag] = _timed(mod.QUESTIONS[name], eng)
                    warm[tag].append(dt)
            with eng.begin() as c:   # 1,000 new events, then the incremental call
                c.execute(insert(VerdictEvent), [{"user_id": 1, "puzzle_id": f"p{i:019d}", "label": None,
                                                  "action": "set", "before": None,
                                                  "after": {"verdict": "accept", "reason": "", "seconds": 3.0}}
                                                 for i in range(1000)])
            inc = {tag: _timed(mod.QUESTIONS[name], eng) for tag, mod in mods.items()}
            r = {"engine": kind, "question": name, "rows": len(rows["new"]),
                 "warm_median_s": round(sorted(warm["new"])[1], 3), "after_1k_new_s": round(inc["new"][0], 3),
                 "option_verdicts": n_ov, "load": round(os.getloadavg()[0], 1)}
            if baseline:
                r["baseline_warm_median_s"] = round(sorted(warm["baseline"])[1], 3)
                r["baseline_after_1k_new_s"] = round(inc["baseline"][0], 3)
                r["same_rows"] = _norm(inc["new"][1]) == _norm(inc["baseline"][1])
            out.append(r)
            print(json.dumps(r), flush=True)
        eng.dispose()
    return out


def _norm(rows: list[dict]) -> list:
    """Rows compared across implementations: floats rounded (sums in a different order), ties in any order."""
    return sorted(repr({k: round(float(v), 3) if isinstance(v, float) else v for k, v in r.items()}) for r in rows)


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--engines", default="sqlite")
    ap.add_argument("--puzzles", type=int, default=100_000)
    ap.add_argument("--baseline", default=None, help="an older db/analytics.py to time side by side")
    a = ap.parse_args()
    res = [r for kind in a.engines.split(",") for r in run(kind, a.puzzles, a.baseline)]
    ok = all(r["warm_median_s"] < 1 and r["after_1k_new_s"] < 1 for r in res)
    print("PASS (< 1 s each)" if ok else "FAIL")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())

"""Every page's time to usable in Chromium, at the demo's size and at 100,000 puzzles + 100,000 answers,
this tree beside an older one; verdict to next puzzle at the large size; the servers' resident memory
at rest after the walk (and one more walk in which every page settles: all its load events answered).

Per page and size: first contentful paint (the browser's own entry) and the time from navigation start
until the page's main component is populated (READY below: its data in the page, its images loaded),
both on the page's clock (performance.now(), 0 = navigation start), medians of --loads loads after one
warm-up load. Pages are opened in turn, this tree's server and the older one's alternating, in the
same browser, so both see the same machine load.

Data: real puzzles by `mvp synth` from two sample videos, cloned under new ids to N puzzles
(bench/web_verdict_latency.py build_db); answers of one run (its base model and one checkpoint, G=8 a
puzzle, stored advantages as `mvp rollout` and the trainer write them) on the first puzzles until
--answers answers; every puzzle frozen in one curated set with train/val/test splits (the pages that
show a set's splits read it: Data, Train, Rollouts). "Demo size" is 12 puzzles (the demo's count) with
192 answers.

Verdict to next puzzle: bench/web_verdict_latency.py's measure (key press to the next puzzle painted,
1 s think time) on the large database, both trees alternating.

Usage: python bench/web_pages.py --compare OLD_TREE [--sizes 12,100000] [--answers 100000] [--loads 5]
       [--verdicts 40]
(OLD_TREE: e.g. `git worktree add /tmp/base b24c0c6`.)"""
from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.web_common import load_avg, summary, synth_source  # noqa: E402
from bench.web_verdict_latency import Variant, build_db  # noqa: E402
from testkit.web import dataframe_rows  # noqa: E402

G = 8
ADMIN = ("boss", "boss-pass-1")
# The page's main component populated: its data in the DOM and every image in it loaded.
IMGS = "(sel) => Array.from(document.querySelectorAll(sel)).every(i => i.complete)"
READY = {
    "curate": "() => { const p = document.querySelector('#mvp-puzzle'); return !!p && !!p.dataset.puzzleId"
              " && Array.from(p.querySelectorAll('img')).every(i => i.complete); }",
    "datasets": "() => !!document.querySelector('.mvp-user[data-user]')",
    "rollouts": "() => { const l = document.querySelectorAll('#ro-left .mvp-answer-row').length;"
                " const r = document.querySelectorAll('#ro-right .mvp-answer-row').length;"
                " const pi = document.querySelector('#ro-puzzle input');"
                " return l > 0 && r > 0 && !!pi && !!pi.value && Array.from(document.querySelectorAll("
                "'#ro-puzzle-box img, #ro-left img, #ro-right img')).every(i => i.complete); }",
    "stats": "() => !!document.querySelector('.mvp-user[data-user]') && !!document.querySelector('#stats-status-chart')",
    "train": "() => { const b = document.querySelector('#train-launch'); const r = document.querySelector('#train-runs');"
             " return !!document.querySelector('.mvp-user[data-user]') && !!b && !b.disabled && !!r"
             " && r.innerText.trim().length > 0; }",     # the form is read-only until its load event returns
    "admin": "() => !!document.querySelector('.mvp-user[data-user]') && "
             f"!!document.querySelector('{dataframe_rows('admin-users')}')",     # its first rows drawn
}
FCP = "() => { const e = performance.getEntriesByName('first-contentful-paint')[0]; return e ? e.startTime : null; }"


def add_answers(url: str, data: Path, n_answers: int) -> None:
    """A run ("bench-run": its base model and checkpoint 1) with G answers a version on the first
    puzzles, scored by the real reward, each with the advantage training computes (stored)."""
    from sqlalchemy import insert, select

    from db.engine import open_db
    from db.models import Puzzle
    from db.models.runs import Checkpoint, Rollout, Run
    from db.users.accounts import add_user
    from mvp_core.reward import score_completion
    from mvp_core.train.loss import group_advantage_list
    S = open_db(url, data)
    with S() as s:
        add_user(s, *ADMIN[:1], "admin", ADMIN[1])
        s.add(Run(id="bench-run", name="bench-run", kind="train", model_path=str(data / "tiny-model"), config={},
                  status="done"))
        s.flush()
        ck = Checkpoint(run_id="bench-run", step=10, path=str(data / "tiny-model"))
        s.add(ck)
        s.commit()
        ck_id = ck.id
        n_puzzles = max(1, n_answers // (2 * G))
        recs = [(pid, json.loads(r)) for pid, r in
                s.execute(select(Puzzle.id, Puzzle.record_json).order_by(Puzzle.id).limit(n_puzzles))]
    rows = []
    for k, (pid, rec) in enumerate(recs):
        labels = [o["label"] for o in rec["options"]]
        for cid in (None, ck_id):
            group = []
            for i in range(G):
                ch = [labels[(k + i + j) % len(labels)] for j in range(len(rec["answer"]))]
                text = f"<think>answer {i}: the motion suggests {ch[0]} first.</think><answer>{', '.join(ch)}</answer>"
                t = score_completion(text, rec["answer"], labels)
                group.append({"run_id": "bench-run", "checkpoint_id": cid, "puzzle_id": pid, "sample_index": i,
                              "completion": text, "chosen_labels": t.labels, "format": t.format,
                              "selection": t.selection, "order": t.order, "exact": t.exact, "total": t.total})
            for r, a in zip(group, group_advantage_list([r["total"] for r in group])):
                r["advantage"] = a
            rows += group
    for start in range(0, len(rows), 20_000):
        with S() as s:
            s.execute(insert(Rollout), rows[start:start + 20_000])
            s.commit()


def add_set(url: str, data: Path, name: str = "bench-set") -> None:
    """Every puzzle in one frozen set, train / val / test in turn (a bench set: the pages' cost depends on
    its size, not on how its splits were drawn)."""
    from sqlalchemy import select

    from db.engine import open_db
    from db.models import Puzzle
    from db.sets.curated import SPLITS, store_set
    from mvp_core.puzzle import canonical_json
    S = open_db(url, data)
    with S() as s:
        recs = [json.loads(r) for r in s.scalars(select(Puzzle.record_json).order_by(Puzzle.id))]
        store_set(s, name, [canonical_json({**r, "split": SPLITS[i % 3]}) for i, r in enumerate(recs)], 0, 0, {})
        s.commit()


def rss_mb(pid: int) -> float:
    import psutil
    p = psutil.Process(pid)
    return round(sum(c.memory_info().rss for c in [p, *p.children(recursive=True)]) / 1e6, 1)


def walk(page, base: str, name: str, out: dict) -> None:
    """One load of the page: navigation to its main component populated."""
    page.goto(f"{base}/{name}/", wait_until="commit")
    out.setdefault(name, {"fcp": [], "ready": [], "timeouts": 0})
    try:
        page.wait_for_function(READY[name], polling="raf", timeout=60_000)
    except Exception:                  # counted and shown, so one page that never settles does not end the run
        out[name]["timeouts"] += 1
        print(f"{base} /{name}/ not populated after 60 s", file=sys.stderr, flush=True)
        return
    ready = page.evaluate("performance.now()")
    fcp = page.evaluate(FCP)
    out[name]["ready"].append(ready)
    if fcp is not None:
        out[name]["fcp"].append(fcp)


def measure_size(browser, tmp: Path, src: Path, n: int, args) -> dict:
    data = tmp / f"data_{n}"
    data.mkdir()
    t = time.perf_counter()
    url, _ = build_db(data, src, n, args.verdicts + 20)
    add_answers(url, data, min(args.answers, n * 2 * G))
    add_set(url, data)
    print(f"database: {n} puzzles in {time.perf_counter() - t:.1f} s", flush=True)
    specs = [("current", ROOT, data, url)]
    if args.compare:
        old = tmp / f"data_{n}_old"
        shutil.copytree(data, old)          # its own database and frames: nothing shared
        specs.append(("compare", args.compare.resolve(), old, f"sqlite:///{old / 'mvp.sqlite'}"))
    variants = [Variant(*sp) for sp in specs]
    res = {v.name: {"pages": {}} for v in variants}
    try:
        from testkit.web import browser_login
        for v in variants:
            v.open(browser)                  # waits for the server; the curator's tab for the verdicts
            v.admin = browser_login(browser, v.base, *ADMIN, "/datasets/")[1]
            v.admin.wait_for_selector(".mvp-user[data-user]", timeout=300_000)
        for rnd in range(args.loads + 1):
            for v in (variants if rnd % 2 == 0 else variants[::-1]):
                v.admin.bring_to_front()
                tmp_out = {} if rnd == 0 else res[v.name]["pages"]    # round 0: warm-up, not counted
                for name in READY:
                    walk(v.admin, v.base, name, tmp_out)
        # the timed walk leaves each page once its main component is there; before the memory is read,
        # one more walk lets every page's later load events run too (the Rollouts page's bank form counts
        # its labels after the run's answers are in)
        from testkit.web import wait_settled
        for v in variants:
            for name in READY:
                v.admin.goto(f"{v.base}/{name}/")
                wait_settled(v.admin, timeout_ms=120_000)
            v.admin.goto("about:blank")
        time.sleep(5)
        for v in variants:
            res[v.name]["rss_at_rest_mb"] = rss_mb(v.proc.pid)
        if n >= args.verdict_min:
            for v in variants:
                v.page.reload()
                v.page.wait_for_selector("#mvp-puzzle[data-puzzle-id]", timeout=60000)
                v.page.wait_for_function("() => window.mvpHotkeysInstalled")
                from bench.web_verdict_latency import MEASURE_JS
                v.page.evaluate(MEASURE_JS)
            total, done, turn = args.verdicts + 5, 0, 0
            while done < total:
                k = min(10, total - done)
                for v in (variants if turn % 2 == 0 else variants[::-1]):
                    v.verdicts(k, 1000, done)
                done += k
                turn += 1
            for v in variants:
                res[v.name]["verdict"] = v.result(5)["rendered"]
    finally:
        for v in variants:
            v.stop()
    return res


def med(sm: dict | None) -> str:
    return f"{sm['median_ms']:.0f}" if sm and sm.get("n") else "-"


def table(results: dict) -> None:
    names = list(next(iter(results.values())))
    print("\nmilliseconds from navigation; medians (" + " | ".join(names) + ")")
    print(f"{'size':>8} {'page':<10} " + " ".join(f"{'fcp ' + k[:7]:>15} {'ready ' + k[:7]:>15}" for k in names))
    for n, res in results.items():
        for page in READY:
            cells = []
            for k in names:
                p = res[k]["pages"].get(page, {"fcp": None, "ready": None})
                late = f" ({p['timeouts']} >60s)" if p.get("timeouts") else ""
                cells.append(f"{med(p['fcp']):>15} {med(p['ready']) + late:>15}")
            print(f"{n:>8} {page:<10} " + " ".join(cells))
        print(f"{n:>8} {'RSS MB':<10} " + " ".join(f"{res[k]['rss_at_rest_mb']:>31}" for k in names))
        for k in names:
            if "verdict" in res[k]:
                vd = res[k]["verdict"]
                print(f"{n:>8} verdict to next puzzle painted, {k}: median {vd['median_ms']} ms, p95 {vd['p95_ms']} ms "
                      f"(n={vd['n']})")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--sizes", default="12,100000", help="puzzle counts, comma-separated")
    ap.add_argument("--answers", type=int, default=100_000, help="answers at most (2 versions x G=8 a puzzle)")
    ap.add_argument("--loads", type=int, default=5, help="measured loads of each page per tree and size")
    ap.add_argument("--verdicts", type=int, default=40)
    ap.add_argument("--verdict-min", type=int, default=10_000, help="measure verdicts at sizes from this one")
    ap.add_argument("--data", type=Path, default=None, help="a synthesized data directory to clone from")
    ap.add_argument("--compare", type=Path, default=None, help="an older tree, served beside this one")
    args = ap.parse_args()
    from playwright.sync_api import sync_playwright

    from testkit.web import CHROMIUM, CHROMIUM_ARGS
    load_before = load_avg()
    results = {}
    with tempfile.TemporaryDirectory() as td:
        tmp = Path(td)
        src = args.data or synth_source(tmp)
        with sync_playwright() as p:
            b = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS)
            for n in map(int, args.sizes.split(",")):
                results[n] = measure_size(b, tmp, src, n, args)
                print(json.dumps({n: results[n]}), flush=True)
            b.close()
    for res in results.values():
        for r in res.values():
            for page in r["pages"].values():
                page["fcp"], page["ready"] = summary(page["fcp"]), summary(page["ready"])
    print(json.dumps({"load_avg_before": load_before, "load_avg_after": load_avg(), "results": results}))
    table(results)
    print(f"load average before / after: {load_before} / {load_avg()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

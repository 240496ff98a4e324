"""Verdict latency on the curate page with 100k puzzles in the database, measured in Chromium.

Time from a verdict key press (keydown, in the page) to the next puzzle fully rendered. Solve
first, then vet: before an accept/reject the bench answers the puzzle (digits, Enter) and waits for
the revealed view; that part is not timed (it is not the verdict path). Rendered means: its id in
the DOM, every <img> of it loaded and decoded, and one animation frame painted. The page's own
clock measures it (performance.now()), so Playwright's overhead is not counted.

Database: real puzzles synthesized from two sample videos, cloned under new ids to N puzzles (same
records, so they render like real ones). The puzzles the bench visits get frame files of their own
(copies under new names), so the browser cache does not hide image loading.

"dom" is the part until the new puzzle's HTML is in the page (server + Gradio); the rest is loading,
decoding and painting its images. --think-ms pauses between verdicts like a curator looking at the
puzzle (the page preloads the next puzzle's frames meanwhile); --think-ms 0 is a key held down.

"confirmed" (the JSON path only) is the time until the server has recorded the verdict and answered.

Usage: python bench/web_verdict_latency.py [--puzzles 100000] [--verdicts 60] [--think-ms 1000] [--data DIR]
       [--compare OLD_TREE]
(--data: an existing synthesized data directory to clone from; default: synthesize one. --compare: a
copy of an older tree's app/ db/ mvp_core/ static/, served over a copy of the same database and measured
in alternating blocks of --block verdicts in the same browser, so both see the same machine load)."""
from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.web_common import load_avg, summary, synth_source  # noqa: E402

MEASURE_JS = """
() => {
  window.mvpLat = []; window.mvpDom = []; window.mvpConfirm = []; window.mvpHit = [];
  let t0 = null, old = null, last = null;
  // on window, capturing: runs before the page's own key handlers (on document), which may swap the
  // view synchronously
  window.addEventListener('keydown', e => {
    if ('ars'.includes(e.key)) { t0 = performance.now(); last = t0;
      old = document.querySelector('#mvp-puzzle').dataset.puzzleId; }
  }, true);
  // app/web/pages/curate/curate.js (the JSON path) says when the server has recorded the verdict
  document.addEventListener('mvp-curate', e => {
    if (e.detail.type === 'confirmed' && last !== null) {
      window.mvpConfirm.push(performance.now() - last); window.mvpHit.push(e.detail.hit); }
  });
  const check = async () => {
    const el = document.querySelector('#mvp-puzzle');
    if (t0 === null || !el || el.dataset.puzzleId === old) return;
    const start = t0; t0 = null;
    window.mvpDom.push(performance.now() - start);
    const imgs = Array.from(el.querySelectorAll('img'));
    await Promise.all(imgs.map(i => i.decode().catch(() => null)));
    requestAnimationFrame(() => window.mvpLat.push(performance.now() - start));
  };
  new MutationObserver(check).observe(document.body, {subtree: true, childList: true, attributes: true});
}
"""


def build_db(data: Path, src: Path, n: int, unique_first: int) -> tuple[str, list[str]]:
    """Clone src's puzzles to n puzzles in data/mvp.sqlite; returns (db url, ids in queue order)."""
    from sqlalchemy import insert, select

    from db.engine import open_db
    from db.models import Option, Puzzle, Video
    from mvp_core.puzzle import canonical_json
    shutil.copytree(src / "frames", data / "frames")
    S_src = open_db(f"sqlite:///{src / 'mvp.sqlite'}", src)
    with S_src() as s:
        recs = [json.loads(r) for r in s.scalars(select(Puzzle.record_json).order_by(Puzzle.id))]
        videos = [{c.name: getattr(v, c.name) for c in Video.__table__.columns} for v in s.scalars(select(Video))]
    url = f"sqlite:///{data / 'mvp.sqlite'}"
    S = open_db(url, data)
    ids = [f"b{i:09d}" for i in range(n)]
    with S() as s:
        s.execute(insert(Video), videos)
        s.commit()
    for start in range(0, n, 10_000):
        puz, opt = [], []
        for k, pid in enumerate(ids[start:start + 10_000], start=start):
            rec = json.loads(json.dumps(recs[k % len(recs)]))
            rec["id"] = pid
            if k < unique_first:         # frames of their own, so nothing is in the browser cache
                for f in rec["frames"] + rec["options"]:
                    new = f"frames/bench/{pid}_{Path(f['uri']).name}"
                    if not (data / new).exists():
                        (data / new).parent.mkdir(parents=True, exist_ok=True)
                        shutil.copy(data / f["uri"], data / new)
                    f["uri"] = new
            puz.append({"id": pid, "video_id": rec["video"]["id"], "params_key": "bench",
                        "mask_start": rec["mask"]["start"], "mask_length": rec["mask"]["length"],
                        "n_options": len(rec["options"]), "record_json": canonical_json(rec)})
            opt += [{"puzzle_id": pid, "label": o["label"], "uri": o["uri"], "t": o["t"],
                     "source_video_id": o["source_video_id"], "kind": o["kind"], "difficulty": o["difficulty"]}
                    for o in rec["options"]]
        with S() as s:
            s.execute(insert(Puzzle), puz)
            s.execute(insert(Option), opt)
            s.commit()
    from db.review import sync_queue
    from db.users.accounts import add_user
    with S() as s:
        sync_queue(s)
        add_user(s, "bench", "curator", "bench-pass-1")
        s.commit()
    return url, ids


def solve(page) -> None:
    """Answer the shown puzzle (options 1..m into the gap, Enter) and wait for the revealed view."""
    m = int(page.get_attribute("#mvp-puzzle", "data-m") or 0)
    if page.get_attribute("#mvp-puzzle", "data-phase") != "answer" or not m:
        return
    for d in range(1, m + 1):
        page.keyboard.press(str(d))
    page.keyboard.press("Enter")
    page.wait_for_selector("#mvp-puzzle[data-phase=vet]", timeout=30000)


class Variant:
    """One server (this tree's code, or an older copy's with --compare) and one logged-in page."""

    def __init__(self, name: str, root: Path, data: Path, url: str):
        from testkit.web import free_port
        self.name, self.port = name, free_port()
        self.base = f"http://127.0.0.1:{self.port}"
        self.log = data.parent / f"serve_{name}.log"
        with open(self.log, "wb") as log:
            self.proc = subprocess.Popen([sys.executable, "-m", "app.cli", "serve", "--data", str(data), "--db", url,
                                          "--port", str(self.port)], cwd=root, stdout=log, stderr=subprocess.STDOUT)
        self.page = None

    def open(self, browser) -> None:
        import urllib.request
        deadline = time.time() + 300
        while True:
            try:
                urllib.request.urlopen(self.base + "/login", timeout=2)
                break
            except OSError:
                if self.proc.poll() is not None or time.time() > deadline:
                    raise RuntimeError(f"{self.name} server did not start:\n{self.log.read_text()}") from None
                time.sleep(0.3)
        from testkit.web import browser_login
        _, page = browser_login(browser, self.base, "bench", "bench-pass-1", "/curate/")
        self.page = page
        page.wait_for_selector("#mvp-puzzle[data-puzzle-id]", timeout=60000)
        page.wait_for_function("() => window.mvpHotkeysInstalled")
        page.evaluate(MEASURE_JS)

    def verdicts(self, n: int, think_ms: int, offset: int) -> None:
        page = self.page
        page.bring_to_front()
        for i in range(n):
            key = "aars"[(offset + i) % 4]
            if key != "s":
                solve(page)               # solve first, then vet: a/r need the curator's answer
            k = page.evaluate("() => window.mvpLat.length")
            page.keyboard.press(key)
            try:
                page.wait_for_function(f"() => window.mvpLat.length > {k}", timeout=30000)
            except Exception:
                print(self.name, "no render after key", i, page.evaluate(
                    "() => [window.mvpLat.length, window.mvpDom.length, window.mvpConfirm.length, "
                    "document.querySelector('#mvp-puzzle')?.dataset.puzzleId, "
                    "document.querySelector('#mvp-msg')?.innerText]"), file=sys.stderr)
                raise
            page.wait_for_timeout(think_ms)
        # the next key of a block must not overlap an unconfirmed verdict of this one
        page.wait_for_function("() => window.mvpConfirm.length === 0 || "
                               "window.mvpConfirm.length === window.mvpLat.length", timeout=30000)

    def result(self, warmup: int) -> dict:
        ev = self.page.evaluate
        out = {"rendered": summary(ev("() => window.mvpLat")[warmup:]),
               "dom": summary(ev("() => window.mvpDom")[warmup:])}
        conf = ev("() => window.mvpConfirm")[warmup:]
        if conf:
            out["confirmed"] = summary(conf)
            hits = ev("() => window.mvpHit")[warmup:]
            out["guess_hit_rate"] = round(sum(hits) / len(hits), 3)
        return out

    def stop(self) -> None:
        self.proc.terminate()
        self.proc.wait(timeout=10)


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--puzzles", type=int, default=100_000)
    ap.add_argument("--verdicts", type=int, default=60, help="measured verdicts per variant")
    ap.add_argument("--warmup", type=int, default=5)
    ap.add_argument("--block", type=int, default=10, help="verdicts per turn when variants alternate")
    ap.add_argument("--think-ms", type=int, default=1000,
                    help="pause between a render and the next key, as a curator looks at the puzzle")
    ap.add_argument("--data", type=Path, default=None, help="a synthesized data directory to clone from")
    ap.add_argument("--compare", type=Path, default=None,
                    help="a copy of an older tree (its app/ db/ mvp_core/ static/): served over a copy of the "
                         "same database, measured in alternating blocks with this tree's code")
    args = ap.parse_args()
    from testkit.web import CHROMIUM, CHROMIUM_ARGS
    from playwright.sync_api import sync_playwright
    with tempfile.TemporaryDirectory() as td:
        tmp = Path(td)
        src = args.data or synth_source(tmp)
        data = tmp / "data"
        data.mkdir()
        t = time.perf_counter()
        url, _ = build_db(data, src, args.puzzles, args.verdicts + args.warmup + 10)
        print(f"database: {args.puzzles} puzzles in {time.perf_counter() - t:.1f} s", flush=True)
        specs = [("current", ROOT, data, url)]
        if args.compare:
            old = tmp / "data_old"
            shutil.copytree(data, old)        # its own frames/thumbnails and database: nothing shared
            specs.append(("compare", args.compare.resolve(), old, f"sqlite:///{old / 'mvp.sqlite'}"))
        variants = [Variant(*sp) for sp in specs]
        load_before = load_avg()
        try:
            with sync_playwright() as p:
                b = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS)
                for v in variants:
                    v.open(b)
                total = args.warmup + args.verdicts
                done, turn = 0, 0
                while done < total:
                    n = min(args.block, total - done)
                    order = variants if turn % 2 == 0 else variants[::-1]
                    for v in order:
                        v.verdicts(n, args.think_ms, done)
                    done += n
                    turn += 1
                results = {v.name: v.result(args.warmup) for v in variants}
                b.close()
        finally:
            for v in variants:
                v.stop()
    cur = results["current"]["rendered"]
    print(json.dumps({"puzzles": args.puzzles, "verdicts": args.verdicts, "think_ms": args.think_ms,
                      "load_avg_before": load_before, "load_avg_after": load_avg(), **results,
                      "target_p95_ms": 100, "meets_target": cur["p95_ms"] < 100}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Verdict latency on the curate page with 100k puzzles in the database, measured in Chromium.

Time from a verdict key press (keydown, in the page) to the next puzzle fully rendered: its id in
the DOM, every <img> of it loaded and decoded, and one animation frame painted. The page's own
clock measures it (performance.now()), so Playwright's overhead is not counted.

Database: real puzzles synthesized from two sample videos, cloned under new ids to N puzzles (same
records, so they render like real ones). The puzzles the bench visits get frame files of their own
(copies under new names), so the browser cache does not hide image loading.

"dom" is the part until the new puzzle's HTML is in the page (server + Gradio); the rest is loading,
decoding and painting its images. --think-ms pauses between verdicts like a curator looking at the
puzzle (the page preloads the next puzzle's frames meanwhile); --think-ms 0 is a key held down.

Usage: python bench/web_verdict_latency.py [--puzzles 100000] [--verdicts 60] [--think-ms 1000] [--data DIR]
(--data: an existing synthesized data directory to clone from; default: synthesize one)."""
from __future__ import annotations

import argparse
import json
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT / "scripts"))

MEASURE_JS = """
() => {
  window.mvpLat = []; window.mvpDom = [];
  let t0 = null, old = null;
  document.addEventListener('keydown', e => {
    if ('ars'.includes(e.key)) { t0 = performance.now();
      old = document.querySelector('#mvp-puzzle').dataset.puzzleId; }
  }, true);
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
    from db.users import add_user
    with S() as s:
        sync_queue(s)
        add_user(s, "bench", "curator", "bench-pass-1")
        s.commit()
    return url, ids


def synth_source(tmp: Path) -> Path:
    import sample_videos as sv
    vids = {p.stem: p for p in sv.fetch()}
    vdir, data = tmp / "videos", tmp / "src"
    vdir.mkdir()
    for name in ("bigbuckbunny", "bikes"):
        shutil.copy(vids[name], vdir / f"{name}.mp4")
    subprocess.run([sys.executable, "-m", "app.cli", "synth", str(vdir), "--data", str(data), "--per-video", "3",
                    "--quiet"], cwd=ROOT, check=True)
    return data


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--puzzles", type=int, default=100_000)
    ap.add_argument("--verdicts", type=int, default=60)
    ap.add_argument("--warmup", type=int, default=5)
    ap.add_argument("--think-ms", type=int, default=1000,
                    help="pause between a render and the next key, as a curator looks at the puzzle")
    ap.add_argument("--data", type=Path, default=None, help="a synthesized data directory to clone from")
    args = ap.parse_args()
    from fixtures_web import CHROMIUM, CHROMIUM_ARGS, free_port
    from playwright.sync_api import sync_playwright
    with tempfile.TemporaryDirectory() as td:
        tmp = Path(td)
        src = args.data or synth_source(tmp)
        data = tmp / "data"
        data.mkdir()
        t = time.perf_counter()
        url, _ = build_db(data, src, args.puzzles, args.verdicts + args.warmup + 10)
        print(f"database: {args.puzzles} puzzles in {time.perf_counter() - t:.1f} s")
        port = free_port()
        proc = subprocess.Popen([sys.executable, "-m", "app.cli", "serve", "--data", str(data), "--db", url,
                                 "--port", str(port)], cwd=ROOT, stdout=subprocess.DEVNULL,
                                stderr=subprocess.DEVNULL)
        base = f"http://127.0.0.1:{port}"
        try:
            import urllib.request
            for _ in range(300):
                try:
                    urllib.request.urlopen(base + "/login", timeout=2)
                    break
                except OSError:
                    time.sleep(0.3)
            with sync_playwright() as p:
                b = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS)
                page = b.new_page(viewport={"width": 1400, "height": 1000})
                page.goto(base + "/curate/")
                page.fill("#login-user", "bench")
                page.fill("#login-password", "bench-pass-1")
                page.click("#login-submit")
                page.wait_for_selector("#mvp-puzzle[data-puzzle-id]", timeout=60000)
                page.wait_for_function("() => window.mvpHotkeysInstalled")
                page.evaluate(MEASURE_JS)
                keys = "aars"
                for i in range(args.warmup + args.verdicts):
                    n = page.evaluate("() => window.mvpLat.length")
                    page.keyboard.press(keys[i % len(keys)])
                    page.wait_for_function(f"() => window.mvpLat.length > {n}", timeout=30000)
                    page.wait_for_timeout(args.think_ms)
                lat = page.evaluate("() => window.mvpLat")[args.warmup:]
                dom = sorted(page.evaluate("() => window.mvpDom")[args.warmup:])
                b.close()
        finally:
            proc.terminate()
            proc.wait(timeout=10)
    lat.sort()
    p95 = lat[min(len(lat) - 1, int(round(0.95 * len(lat))) - 1)]
    print(json.dumps({"puzzles": args.puzzles, "verdicts": len(lat), "think_ms": args.think_ms,
                      "dom_median_ms": round(statistics.median(dom), 1),
                      "median_ms": round(statistics.median(lat), 1),
                      "p95_ms": round(p95, 1), "max_ms": round(lat[-1], 1), "target_p95_ms": 250,
                      "meets_target": p95 < 250}))
    return 0


if __name__ == "__main__":
    sys.exit(main())

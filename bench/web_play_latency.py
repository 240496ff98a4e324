"""Play-in-gap latency on the curate page, measured in Chromium: from the `p` key press (keydown, in
the page) to the first frame of the chosen sequence drawn inside the gap (app/web/pages/curate/curate.js emits
"play-started" once that frame is decoded and shown).

Uncached: the puzzle's frames have names of their own (copies, see bench/web_verdict_latency.py
`build_db`), so the full-size frames the player shows were never fetched by this browser. Cached:
`p` pressed again on the same puzzle 1.5 s later (the sequence's frames are then in the browser).
Each puzzle is opened by its deep link, the curator picks options 1..m into the gap, then plays.

Usage: python bench/web_play_latency.py [--puzzles 100000] [--plays 30] [--data DIR]"""
from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.web_common import load_avg, summary, synth_source  # noqa: E402
from bench.web_verdict_latency import Variant, build_db  # noqa: E402

MEASURE_JS = """
() => {
  window.mvpPlayMs = []; let t0 = null;
  window.addEventListener('keydown', e => { if (e.key === 'p') t0 = performance.now(); }, true);
  document.addEventListener('mvp-curate', e => {
    if (e.detail.type === 'play-started' && t0 !== null) { window.mvpPlayMs.push(performance.now() - t0); t0 = null; }
  });
}
"""


def play_once(page, k: int) -> float:
    page.keyboard.press("p")
    page.wait_for_function(f"() => window.mvpPlayMs.length > {k}", timeout=30000)
    return page.evaluate(f"() => window.mvpPlayMs[{k}]")


def measure(v: Variant, ids: list[str], plays: int) -> dict:
    page = v.page
    uncached, cached = [], []
    for pid in ids[:plays]:
        page.goto(f"{v.base}/curate/?puzzle={pid}")
        page.wait_for_selector(f"#mvp-puzzle[data-puzzle-id='{pid}'][data-phase=answer]", timeout=60000)
        page.wait_for_function("() => window.mvpHotkeysInstalled && window.mvpCurate")
        page.evaluate(MEASURE_JS)
        m = int(page.get_attribute("#mvp-puzzle", "data-m"))
        for d in range(1, m + 1):
            page.keyboard.press(str(d))
        uncached.append(play_once(page, 0))
        page.wait_for_timeout(1500)
        cached.append(play_once(page, 1))
    return {"uncached": summary(uncached), "cached": summary(cached)}


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--puzzles", type=int, default=100_000)
    ap.add_argument("--plays", type=int, default=30)
    ap.add_argument("--data", type=Path, default=None, help="a synthesized data directory to clone from")
    args = ap.parse_args()
    from testkit.web import CHROMIUM, CHROMIUM_ARGS
    from playwright.sync_api import sync_playwright
    with tempfile.TemporaryDirectory() as td:
        tmp = Path(td)
        src = args.data or synth_source(tmp)
        data = tmp / "data"
        data.mkdir()
        t = time.perf_counter()
        url, ids = build_db(data, src, args.puzzles, args.plays + 2)
        print(f"database: {args.puzzles} puzzles in {time.perf_counter() - t:.1f} s", flush=True)
        v = Variant("current", ROOT, data, url)
        load_before = load_avg()
        try:
            with sync_playwright() as p:
                b = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS)
                v.open(b)
                res = measure(v, ids, args.plays)
                b.close()
        finally:
            v.stop()
    ok = res["cached"]["p95_ms"] < 300 and res["uncached"]["p95_ms"] < 1500
    print(json.dumps({"puzzles": args.puzzles, "plays": args.plays, "load_avg_before": load_before,
                      "load_avg_after": load_avg(), **res, "target_p95_ms": {"cached": 300, "uncached": 1500},
                      "meets_target": ok}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())

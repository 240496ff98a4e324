"""Where one page's load time goes, this tree beside an older one: per load, on the page's clock
(performance.now(), 0 = navigation start), when the document was parsed, when the page sent its first
Gradio event (a queue join, or the plain POST of an event outside the queue: Gradio's boot ends
there), when the last queued event's answer arrived, and when the page's main component was populated
(bench/web_pages.py READY), when the load's events had all answered (settled), and in how many rounds
after the first (an answer that fills a picker may set off the picker's own event: docs/web.md, "Pickers
a load fills"). Ready minus the last answer is the browser's own work after the data: 1,416 ms Train
loads spent ~0.6 s there on six load events' progress overlays (docs/web.md, "Train").

The event times come from a script added before the page's own (testkit/web.py EVENT_HOOK). Loads
alternate between the two servers in one browser, so both see the same machine load. Data:
bench/web_pages.py's, at the demo's size by default (12 puzzles, 192 answers, all in one frozen set;
--size N for N puzzles, 16 answers a puzzle up to 100,000).

Usage: python bench/web_page_phases.py --page train[,rollouts,...] --compare OLD_TREE [--loads 8] [--size N]
(OLD_TREE: `git worktree add DIR COMMIT`.)"""
from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.web_common import load_avg, synth_source  # noqa: E402
from bench.web_pages import ADMIN, READY, add_answers, add_set  # noqa: E402
from bench.web_verdict_latency import Variant, build_db  # noqa: E402
from testkit.web import EVENT_HOOK  # noqa: E402

PHASES = ("parsed", "first event", "last answer", "ready", "settled", "rounds")
ROUND_GAP_MS = 15
QUIET_MS = 800              # settled: every event of the load answered, and nothing new sent for this long
SETTLE_LIMIT_MS = 60_000
# the events the page sent, [time, trigger ("load", "change", "then", "tick"...), id], and the answers, [time, id]
SEEN_JS = """() => { const deps = window.gradio_config.dependencies;
  const trig = (fn) => deps[fn].targets.map(t => t[1]).join(',');
  return [window.__phases.filter(p => p[1] === 'event').map(p => [p[0], trig(p[2]), p[3]]),
          window.__phases.filter(p => p[1] === 'process_completed').map(p => [p[0], p[3]])]; }"""


def one_load(page, base: str, name: str) -> dict:
    """One load's phases. `settled`: when the last of the load's own events answered (a timer's ticks, the
    live views' polling, left out), waiting until every one has; `rounds`: how many times the page sent
    events after the first, one round per answer that set off more (docs/web.md, "Pickers a load fills")."""
    page.goto(f"{base}/{name}/", wait_until="commit")
    page.wait_for_function(READY[name], polling="raf", timeout=60_000)
    ready = page.evaluate("performance.now()")
    while True:
        events, answers = page.evaluate(SEEN_JS)
        now = page.evaluate("performance.now()")
        mine = [(t, i) for t, trig, i in events if trig != "tick"]
        done = {i for _, i in answers}
        last = max([e[0] for e in events] + [a[0] for a in answers], default=0.0)
        if all(i in done for _, i in mine) and now - last > QUIET_MS or now - ready > SETTLE_LIMIT_MS:
            break
        page.wait_for_timeout(100)
    parsed = page.evaluate("() => performance.getEntriesByType('navigation')[0].domContentLoadedEventEnd")
    ids = {i for _, i in mine}
    answered = [t for t, i in answers if i in ids]
    sent = sorted(t for t, _ in mine)
    # sends less than ROUND_GAP_MS apart are one round (the events one answer set off leave together)
    rounds = sum(1 for a, b in zip(sent, sent[1:]) if b - a > ROUND_GAP_MS) if sent else None
    return {"parsed": parsed, "first event": min(sent) if sent else None,
            "last answer": max([t for t in answered if t <= ready], default=None), "ready": ready,
            "settled": max(answered, default=None) if all(i in done for i in ids) else None, "rounds": rounds}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--page", default="train", help=f"one page or several, comma-separated ({', '.join(READY)})")
    ap.add_argument("--compare", type=Path, required=True, help="an older tree, served beside this one")
    ap.add_argument("--loads", type=int, default=8, help="measured loads per tree, after one warm-up each")
    ap.add_argument("--size", type=int, default=12, help="puzzles (12: the demo's; answers: 16 a puzzle, at "
                    "most 100,000; all in one frozen set)")
    ap.add_argument("--data", type=Path, default=None, help="a synthesized data directory to clone from")
    args = ap.parse_args()
    names = args.page.split(",")
    if not set(names) <= set(READY):
        ap.error(f"--page: {', '.join(sorted(set(names) - set(READY)))} is not a page ({', '.join(READY)})")
    from playwright.sync_api import sync_playwright

    from testkit.web import CHROMIUM, CHROMIUM_ARGS, browser_login
    load_before = load_avg()
    with tempfile.TemporaryDirectory() as td:
        tmp = Path(td)
        src = args.data or synth_source(tmp)
        variants = []
        for name, root in (("current", ROOT), ("compare", args.compare.resolve())):
            data = tmp / name
            data.mkdir()
            url, _ = build_db(data, src, args.size, 60)
            add_answers(url, data, min(args.size * 16, 100_000))
            add_set(url, data)
            variants.append(Variant(name, root, data, url))
        res = {(v.name, name): [] for v in variants for name in names}
        try:
            with sync_playwright() as p:
                browser = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS)
                pages = {}
                for v in variants:
                    v.open(browser)
                    page = browser_login(browser, v.base, *ADMIN, "/datasets/")[1]
                    page.context.add_init_script(EVENT_HOOK)
                    page.wait_for_selector(".mvp-user[data-user]", timeout=300_000)
                    pages[v.name] = page
                for i in range(args.loads + 1):
                    for name in names:
                        for v in (variants if i % 2 == 0 else variants[::-1]):
                            pages[v.name].bring_to_front()
                            row = one_load(pages[v.name], v.base, name)
                            if i:                        # load 0 warms the cache
                                res[v.name, name].append(row)
                browser.close()
        finally:
            for v in variants:
                v.stop()
    print(f"{args.size} puzzles: ms from navigation, medians of {args.loads} loads (settled: its range too)")
    print(f"{'page':<10}{'tree':<10}" + "".join(f"{k:>14}" for k in PHASES) + f"{'ready - answer':>16}"
          f"{'settled range':>16}")
    for (tree, name), rows in res.items():
        med = {k: statistics.median([r[k] for r in rows if r[k] is not None] or [float("nan")]) for k in PHASES}
        after = statistics.median([r["ready"] - r["last answer"] for r in rows if r["last answer"] is not None]
                                  or [float("nan")])
        settled = [r["settled"] for r in rows if r["settled"] is not None] or [float("nan")]
        print(f"{name:<10}{tree:<10}" + "".join(f"{med[k]:>14.0f}" for k in PHASES) + f"{after:>16.0f}"
              f"{f'{min(settled):.0f}-{max(settled):.0f}':>16}")
    print(f"load average before / after: {load_before} / {load_avg()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

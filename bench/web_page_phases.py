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
bench/web_pages.py's demo size (12 puzzles, 192 answers).

Usage: python bench/web_page_phases.py --page train --compare OLD_TREE [--loads 8]
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
from bench.web_pages import ADMIN, READY, add_answers  # noqa: E402
from bench.web_verdict_latency import Variant, build_db  # noqa: E402
from testkit.web import EVENT_HOOK  # noqa: E402

PHASES = ("parsed", "first event", "last answer", "ready", "settled", "rounds")
ROUND_GAP_MS = 15
SETTLE_WAIT_MS = 2500       # after ready: any event a load's answers set off has been sent and answered by then
# the trigger of each event the page sent ("load", "change", "then", "tick"...), from the page's Gradio config
TRIGGERS_JS = """() => window.__phases.filter(p => p[1] === 'event')
  .map(p => window.gradio_config.dependencies[p[2]].targets.map(t => t[1]).join(','))"""


def one_load(page, base: str, name: str) -> dict:
    """One load's phases. `settled`: the last answer of the load's own events (a timer's ticks, the live
    views' polling, left out: the answers before the first tick is sent); `rounds`: how many times the
    page sent events after the first, one round per answer that set off more (docs/web.md, "Pickers a
    load fills")."""
    page.goto(f"{base}/{name}/", wait_until="commit")
    page.wait_for_function(READY[name], polling="raf", timeout=60_000)
    ready = page.evaluate("performance.now()")
    page.wait_for_timeout(SETTLE_WAIT_MS)
    marks = page.evaluate("() => window.__phases")
    triggers = page.evaluate(TRIGGERS_JS)
    parsed = page.evaluate("() => performance.getEntriesByType('navigation')[0].domContentLoadedEventEnd")
    events = [(t, trig) for (t, k, _), trig in zip([m for m in marks if m[1] == "event"], triggers)]
    first_tick = min([t for t, trig in events if trig == "tick"], default=float("inf"))
    sent = [t for t, trig in events if t < first_tick]
    answers = [t for t, k, _ in marks if k == "process_completed" and t < first_tick]
    # sends less than ROUND_GAP_MS apart are one round (the events one answer set off leave together)
    rounds = sum(1 for a, b in zip(sent, sent[1:]) if b - a > ROUND_GAP_MS) if sent else None
    return {"parsed": parsed, "first event": min(sent) if sent else None,
            "last answer": max([t for t in answers if t <= ready], default=None), "ready": ready,
            "settled": max(answers, default=None), "rounds": rounds}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--page", default="train", choices=sorted(READY))
    ap.add_argument("--compare", type=Path, required=True, help="an older tree, served beside this one")
    ap.add_argument("--loads", type=int, default=8, help="measured loads per tree, after one warm-up each")
    ap.add_argument("--data", type=Path, default=None, help="a synthesized data directory to clone from")
    args = ap.parse_args()
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
            url, _ = build_db(data, src, 12, 60)
            add_answers(url, data, 192)
            variants.append(Variant(name, root, data, url))
        res = {v.name: [] for v in variants}
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
                    for v in (variants if i % 2 == 0 else variants[::-1]):
                        pages[v.name].bring_to_front()
                        row = one_load(pages[v.name], v.base, args.page)
                        if i:                        # load 0 warms the cache
                            res[v.name].append(row)
                browser.close()
        finally:
            for v in variants:
                v.stop()
    print(f"/{args.page}/ at demo size: ms from navigation, medians of {args.loads} loads")
    print(f"{'tree':<10}" + "".join(f"{k:>14}" for k in PHASES) + f"{'ready - answer':>16}")
    for name, rows in res.items():
        med = {k: statistics.median([r[k] for r in rows if r[k] is not None] or [float("nan")]) for k in PHASES}
        after = statistics.median([r["ready"] - r["last answer"] for r in rows if r["last answer"] is not None]
                                  or [float("nan")])
        print(f"{name:<10}" + "".join(f"{med[k]:>14.0f}" for k in PHASES) + f"{after:>16.0f}")
    for name, rows in res.items():
        settled = [r["settled"] for r in rows if r["settled"] is not None] or [float("nan")]
        print(f"{name}: settled at {min(settled):.0f}-{max(settled):.0f} ms")
    print(f"load average before / after: {load_before} / {load_avg()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""CPU a page's Gradio queue spends after each event on its analytics summary, as Gradio ships (a pandas
table of every recorded event, up to 10,000, for the monitoring dashboard) beside the server's setting
(app/web/server.py `_no_event_analytics`: one record kept, never summarised), at several counts of
events recorded so far (a server that has run longer has more). Each is the real Queue of a Blocks,
called as the queue calls it after an event; medians of interleaved repeats. Docs: docs/web.md.

    python bench/gradio_event_analytics.py [--repeats 9]"""
from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def page_queue(turned_off: bool):
    import gradio as gr

    from app.web.server import _no_event_analytics
    with gr.Blocks() as blocks:
        gr.Markdown("x")
    if turned_off:
        _no_event_analytics(blocks)
    return blocks._queue


def records(n: int) -> dict:
    """n recorded events over 20 functions, as Queue.push records them."""
    return {f"e{i}": {"time": time.time(), "status": ("success", "failed", "queued")[i % 3], "process_time": 0.01 * i,
                      "function": f"fn{i % 20}", "session_hash": "s"} for i in range(n)}


def after_one_event(queue, recorded: dict) -> float:
    """CPU seconds of what the queue does with its analytics when an event ends."""
    queue.event_analytics = dict(recorded)
    while len(queue.event_analytics) > queue.ANALYTICS_MAX_EVENTS:        # as Queue.push trims them
        queue.event_analytics.pop(next(iter(queue.event_analytics)))
    queue.events_recorded += 1
    t = time.process_time()
    queue.compute_analytics_summary(list(queue.event_analytics.values()))
    return time.process_time() - t


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeats", type=int, default=9)
    args = ap.parse_args()
    shipped, off = page_queue(False), page_queue(True)
    print("| events recorded | as shipped, ms an event | turned off, ms an event | ratio |")
    print("|---:|---:|---:|---:|")
    for n in (10, 100, 1000, 10000):
        recorded = records(n)
        a, b = [], []
        for _ in range(args.repeats):                   # interleaved
            a.append(after_one_event(shipped, recorded))
            b.append(after_one_event(off, recorded))
        ma, mb = statistics.median(a) * 1000, statistics.median(b) * 1000
        print(f"| {n} | {ma:.2f} | {mb:.3f} | {mb / ma:.4f}x |")
    print(f"load average {' '.join(Path('/proc/loadavg').read_text().split()[:3])}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

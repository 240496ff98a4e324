"""The server at rest holds no training code: building every page imports neither torch nor
transformers (about 700 MB resident between them; docs/web.md, "Speed and memory"). Jobs that need
them run in their own processes. Nor plotly: the Train page's metric chart imports it when it first
draws (app/web/pages/train/explore.py)."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

# Threads a page starts while it is built are waited for, so an import in the background counts too.
CODE = """
import sys, threading
from app.web.server import build_app
before = set(threading.enumerate())
build_app(sys.argv[1])
for t in set(threading.enumerate()) - before:
    t.join(120)
import gc, gradio, gradio.blocks_events, gradio.component_meta
print(sorted({b.analytics_enabled for b in gc.get_objects() if isinstance(b, gradio.Blocks)}))
print(gradio.component_meta.create_or_modify_pyi.__name__, gradio.blocks_events.create_or_modify_pyi.__name__)
print(sorted(m for m in ('torch', 'transformers', 'ray', 'datasets', 'plotly') if m in sys.modules))
"""


@pytest.mark.slow
def test_the_built_server_imports_no_training_code(tmp_path):
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    out = subprocess.run([sys.executable, "-c", CODE, str(tmp_path / "data")], cwd=ROOT, env=env,
                         capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip().splitlines()[-1] == "[]", out.stdout[-2000:]
    # nor does it re-write Gradio's type stubs (app/web/gradio_stubs.py): every component was made without it
    assert out.stdout.strip().splitlines()[-2] == "_no_stubs _no_stubs", out.stdout[-2000:]
    # nor does any page ask the package index for Gradio's latest version (common.py `page_blocks`)
    assert out.stdout.strip().splitlines()[-3] == "[False]", out.stdout[-2000:]


def test_every_page_queue_polls_at_the_servers_interval():
    """Gradio's queue has no setting for its idle polling (app/web/server.py `_slow_idle_polling` sets its
    attributes): each page's queue takes the server's intervals, so a Gradio that renamed them fails here
    rather than polling every millisecond again."""
    import gradio as gr

    from app.web import server
    with gr.Blocks() as blocks:
        gr.Markdown("x")
    blocks.queue(default_concurrency_limit=8)
    server._slow_idle_polling(blocks)
    assert blocks._queue.sleep_when_free == server.GRADIO_QUEUE_IDLE_POLL_S
    assert blocks._queue.progress_update_sleep_when_free == server.GRADIO_PROGRESS_IDLE_POLL_S


def test_no_page_queue_summarises_its_events():
    """Gradio's queue summarises its recorded events in a pandas table after each event for a monitoring
    dashboard the pages turn off (app/web/server.py `_no_event_analytics`): a page's real Queue, given
    events, keeps one record and returns the empty summary; a Gradio that renamed the knobs fails here."""
    import gradio as gr

    from app.web import server
    with gr.Blocks() as blocks:
        gr.Markdown("x")
    queue = blocks._queue
    records = [{"time": 0.0, "status": "success", "process_time": 0.01, "function": "f", "session_hash": "s"}] * 3
    queue.events_recorded += 3
    assert queue.compute_analytics_summary(records)["functions"]          # as Gradio ships: summarised
    server._no_event_analytics(blocks)
    queue.cached_event_analytics_summary = {"functions": {}}
    queue.events_recorded += 3
    assert queue.compute_analytics_summary(records) == {"functions": {}}
    assert queue.ANALYTICS_MAX_EVENTS == server.GRADIO_ANALYTICS_KEPT


def test_every_page_runs_its_events_eight_at_a_time(tmp_path):
    """The pages' queues take the server's concurrency (GRADIO_CONCURRENCY, given through Gradio's
    environment setting when the pages are built): a Gradio that stopped reading it fails here."""
    from starlette.routing import Mount

    from app.web import server
    app = server.build_app(tmp_path, f"sqlite:///{tmp_path / 'mvp.sqlite'}")
    pages = [r.app.get_blocks() for r in app.routes if isinstance(r, Mount) and hasattr(r.app, "get_blocks")]
    assert len(pages) == len(server._page_builders())
    assert {b._queue.default_concurrency_limit for b in pages} == {int(server.GRADIO_CONCURRENCY)}
    # and none summarises its events (test_no_page_queue_summarises_its_events)
    assert {b._queue.ANALYTICS_MAX_EVENTS for b in pages} == {server.GRADIO_ANALYTICS_KEPT}

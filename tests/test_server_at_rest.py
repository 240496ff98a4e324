"""The server at rest holds no training code: building every page, and then opening each, imports neither
torch nor transformers (about 700 MB resident between them; docs/web.md, "Speed and memory"). Jobs that
need them run in their own processes. Nor plotly: the Train page's metric chart imports it when it first
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


@pytest.mark.browser
@pytest.mark.slow
def test_a_walk_through_every_page_leaves_no_training_code_in_the_server(web_data, browser, tmp_path):
    """Building the pages is not all the server runs: each page's load events run in it too (the Rollouts
    page counts a steering bank's labels and splits as it opens, mvp_core/steer/splits.py). After an admin
    has opened every page of a studio with a run's answers, each page settled, the server has not loaded
    torch (its library is not mapped into the process), nor matplotlib (installed here for bench/). The
    answers carry their advantages, as `mvp rollout` and the trainer store them: for an imported run's,
    which lack them, the page computes them with the trainer's own function and so imports torch
    (docs/web.md, "Speed and memory")."""
    from fixtures_web import copy_web_data, login
    from testkit.web import Server, free_port, wait_settled
    data = tmp_path / "data"
    db_url = f"sqlite:///{data / 'mvp.sqlite'}"
    copy_web_data(web_data, data)
    _store_advantages(db_url, data)
    srv = Server(data, db_url, free_port(), tmp_path / "serve.log").start()
    ctx = None
    try:
        ctx, page = login(browser, srv.url, "ada", path="/curate/")
        for name in ("curate", "gallery", "datasets", "rollouts", "stats", "train", "admin"):
            page.goto(f"{srv.url}/{name}/")
            page.wait_for_selector(".mvp-nav", timeout=30000)
            wait_settled(page)
            if name == "rollouts":      # the run's answers, and the bank form with its label count
                page.wait_for_selector("#ro-left .mvp-rollouts", timeout=30000)
                page.get_by_text("Train a steering bank (background job)").click()
                page.wait_for_selector("#ro-bank-plan", timeout=30000)
        mapped = {line.split()[-1] for line in Path(f"/proc/{srv.proc.pid}/maps").read_text().splitlines()}
        torch_libs = sorted(p for p in mapped if "libtorch" in p)
        assert not torch_libs, f"a page's load imported torch into the server: {torch_libs[:2]}"
        # nor matplotlib, which Gradio imported around every event (app/web/gradio_matplotlib.py)
        mpl_libs = sorted(p for p in mapped if "/matplotlib/" in p)
        assert not mpl_libs, f"an event imported matplotlib into the server: {mpl_libs[:2]}"
    finally:
        if ctx is not None:
            ctx.close()
        srv.stop()


def _store_advantages(db_url: str, data: Path) -> None:
    """Each stored answer's advantage, from its group's rewards by the trainer's function, where it has none."""
    from sqlalchemy import select

    from db.engine import open_db
    from db.models.runs import Rollout
    from mvp_core.train.loss import group_advantage_list
    Session = open_db(db_url, data)
    with Session() as s:
        groups: dict = {}
        for r in s.scalars(select(Rollout).order_by(Rollout.sample_index)):
            groups.setdefault((r.run_id, r.checkpoint_id, r.puzzle_id), []).append(r)
        for rows in groups.values():
            for r, a in zip(rows, group_advantage_list([r.total for r in rows])):
                r.advantage = a if r.advantage is None else r.advantage
        s.commit()

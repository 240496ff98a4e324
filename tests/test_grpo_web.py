"""The training page in real Chromium: an admin launches a tiny-model run on a curated set, sees
the first metric points, reloads the page and finds the run again, stops it, and the whole
process group is gone; a curator is refused the page and its endpoints."""
from __future__ import annotations

import json
import os
import re
import time

import pytest
from fixtures_web import login, shot

from app.web.jobs import group_pids

SET = "train-web-set"


@pytest.fixture(scope="module")
def train_ready(web_app):
    """A curated set made of the app's synthesized puzzles and the tiny model at DATA/tiny-model
    (the page's default model path)."""
    from sqlalchemy import select

    from db.models import Puzzle
    from db.sets.curated import list_sets, store_set
    from mvp_core.model.tiny import build_tiny_model
    with web_app.Session() as s:
        if SET not in {x["name"] for x in list_sets(s)}:
            lines = list(s.scalars(select(Puzzle.record_json).order_by(Puzzle.id)))
            store_set(s, SET, lines, 0, 0, {"note": "test"})
            s.commit()
    build_tiny_model(web_app.data_dir / "tiny-model", seed=0)
    return web_app


def _state(page) -> dict:
    el = page.locator("#train-state")
    return {k: el.get_attribute(f"data-{k}") for k in ("state", "step", "pid", "pgid", "run")}


def _wait_state(page, pred, timeout_s: float):
    deadline = time.time() + timeout_s
    while time.time() < deadline:
        if page.locator("#train-state").count():
            st = _state(page)
            if pred(st):
                return st
        time.sleep(0.5)
    raise AssertionError(f"timed out; last state {_state(page) if page.locator('#train-state').count() else None}")


@pytest.mark.browser
@pytest.mark.slow
def test_admin_launches_watches_and_stops_a_run(train_ready, browser):
    app = train_ready
    ctx, page = login(browser, app, "ada", path="/train/")
    try:
        page.wait_for_selector("#train-launch", timeout=60000)
        page.wait_for_function("document.querySelector('#train-model input')?.value.length > 0", timeout=30000)
        assert "tiny-model" in page.locator("#train-model input").first.input_value()
        assert page.locator("#train-reward input").input_value() == "mvp"      # the real reward by default
        page.locator("#train-max-steps input").fill("500")       # still running when we stop it
        page.locator("#train-max-len input").fill("8")
        page.click("#train-launch")
        st = _wait_state(page, lambda s: s["state"] == "running", 60)
        pid, pgid = int(st["pid"]), int(st["pgid"])
        assert group_pids(pgid)                                  # the trainer is running ...
        st = _wait_state(page, lambda s: int(s["step"] or 0) >= 1, 300)   # ... and logged a first step
        # the table holds the newest 8 steps in order; a fast machine may have logged more than 8
        # before the first poll, so check the window, not that it starts at step 1
        steps = [int(t) for t in page.locator("#train-metrics-table tr td:first-child").all_inner_texts()]
        assert steps and steps == list(range(max(1, steps[-1] - 7), steps[-1] + 1)), steps
        page.wait_for_selector("#train-reward-chart circle[data-series=reward]", timeout=30000)
        # the log box holds the last 40 lines, so any step's line (step 1 may have scrolled off)
        page.wait_for_function(r"/step \d+: reward/.test(document.querySelector('#train-log')?.textContent ?? '')",
                               timeout=30000)
        shot(page, "train-running")

        # a second launch is refused while the run is going
        page.click("#train-launch")
        page.wait_for_selector("text=already going", timeout=30000)

        # reload: the page re-attaches to the same run
        page.reload()
        st2 = _wait_state(page, lambda s: s["state"] == "running", 60)
        assert int(st2["pid"]) == pid

        page.click("#train-stop")
        _wait_state(page, lambda s: s["state"] in ("stopped", "finished", "died"), 120)
        assert group_pids(pgid) == []                          # the whole tree is gone
        with pytest.raises(ProcessLookupError):
            os.kill(pid, 0)
        status = json.loads((app.data_dir / "train" / "active.json").read_text())
        run_dir = status["run_dir"]
        assert json.loads(open(os.path.join(run_dir, "status.json")).read())["state"] == "stopped"
        assert any(n.startswith("step_") for n in os.listdir(os.path.join(run_dir, "checkpoints")))
        # the past-runs table says so without a reload
        row = f"#train-runs-table tr[data-run='{os.path.basename(run_dir)}']"
        page.wait_for_function("s => { const r = document.querySelector(s); return r && r.innerText.includes('stopped')"
                               " && !r.innerText.includes('running'); }", arg=row, timeout=30000)
        shot(page, "train-stopped")
    finally:
        ctx.close()


@pytest.mark.browser
def test_form_is_read_only_until_the_page_load_fills_it(train_ready, browser):
    """The page's load event is held back (its request parked: a queue join, or the plain POST of an
    event that skips the queue): until it returns, the form and Launch are disabled, so nothing typed
    is overwritten by the load and no launch goes out with settings the page never showed; once
    released, the form holds the load's values and is editable."""
    app = train_ready
    ctx, page = login(browser, app, "ada", path="/")
    parked, released = [], []
    events = re.compile(r"/train/gradio_api/(queue/join|run/)")

    def park(route):
        if not released and route.request.method == "POST" and events.search(route.request.url):
            parked.append(route)
        else:
            route.continue_()
    try:
        page.wait_for_load_state("networkidle")
        page.route("**/train/gradio_api/**", park)
        page.goto(app.url + "/train/")
        page.wait_for_selector("#train-launch", timeout=60000)
        deadline = time.time() + 30
        while not parked and time.time() < deadline:
            page.wait_for_timeout(100)
        assert parked, "the page's load event never reached the server"
        assert page.locator("#train-launch").is_disabled()
        for el in ("#train-max-steps input", "#train-lr input", "#train-model input"):
            assert page.locator(el).is_disabled(), el
        hold = parked.copy()
        released.append(True)                                                    # later ones pass
        for route in hold:
            route.continue_()
        page.wait_for_function("document.querySelector('#train-model input')?.value.includes('tiny-model')",
                               timeout=30000)
        page.wait_for_function("document.querySelector('#train-launch')?.disabled === false", timeout=30000)
        page.locator("#train-max-steps input").fill("7")      # editable now, and not overwritten
        page.wait_for_timeout(1500)                            # a refresh tick or two
        assert page.locator("#train-max-steps input").input_value() == "7"
    finally:
        ctx.close()


@pytest.mark.browser
def test_curator_is_refused_page_and_endpoints(train_ready, browser):
    app = train_ready
    ctx, page = login(browser, app, "cora", path="/train/")
    try:
        resp = page.goto(app.url + "/train/")
        assert resp.status in (401, 403)
        assert "train-launch" not in page.content()
        for path in ("/train/gradio_api/call/train_launch", "/train/gradio_api/call/train_stop"):
            r = ctx.request.post(app.url + path, data={"data": []})
            assert r.status in (401, 403), (path, r.status)
        assert not (app.data_dir / "train" / "active.json").exists() or \
            json.loads((app.data_dir / "train" / "active.json").read_text())["user"] != "cora"
    finally:
        ctx.close()


@pytest.mark.slow
def test_cli_train_on_a_curated_set_from_the_db(train_ready, tmp_path, one_thread):
    """`mvp train --set NAME`: the set (puzzles synthesized by `mvp synth` from real videos) is
    snapshot into the run directory; its sha256 in config.yaml is the set's content hash. Run through
    the CLI's main() in this process (the page test above runs `mvp train` as a process)."""
    import yaml
    from fixtures_grpo import ROOT

    from app.cli import main
    from db.sets.curated import get_set
    app = train_ready
    out = tmp_path / "run"
    rc = main(["train", "--set", SET, "--data", str(app.data_dir), "--db", app.db_url,
               str(ROOT / "configs" / "tiny.yaml"), f"model={app.data_dir / 'tiny-model'}", f"output_dir={out}",
               "max_steps=1", "max_completion_length=4"])
    assert rc == 0
    info = yaml.safe_load((out / "config.yaml").read_text())["run_info"]["set"]
    with app.Session() as s:
        cs = get_set(s, SET)
        assert info["name"] == SET and info["sha256"] == cs.content_hash and info["n_puzzles"] == cs.n_puzzles
    assert (out / "puzzles.jsonl").read_text().count("\n") == cs.n_puzzles
    assert (out / "checkpoints" / "step_000001" / "model.safetensors").is_file()

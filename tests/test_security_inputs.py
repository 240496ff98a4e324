"""Security probe: bounded inputs and closed routes. Deeply nested or oversized JSON gets one line and
a 4xx (never a 500); Gradio's upload route is closed on every page (nothing reaches its temp folder);
Gradio's monitoring and profiling routes are for admins only; a verdict or option verdict is taken
only on a puzzle leased to the curator or one they judged before (db/review/access.py); the Train
page's launch, called over HTTP as the page calls it, refuses YAML aliases, oversized YAML, NaN /
Infinity, out-of-bound numbers and empty fields with one line, before any run folder exists."""
from __future__ import annotations

import json
import time

import pytest
from fixtures_security import PASSWORD, http_login
from fixtures_web import PASSWORDS

pytestmark = [pytest.mark.browser]
PAGES = ("curate", "rollouts", "stats", "train", "admin")


def test_nested_and_oversized_json_get_one_line_and_a_4xx(sec_server):
    c = http_login(sec_server.url, "cur03", PASSWORD["cur03"])
    for body in (b"[" * 100_000, b'{"a":' * 50 + b"1" + b"}" * 50, b'{"state": {"back": [[[[[[[[["x"]]]]]]]]]}}'):
        r = c.post("/curate/api/verdict", content=body, headers={"Content-Type": "application/json"})
        assert r.status_code == 400 and "nested deeper than" in r.json()["error"], (r.status_code, r.text[:200])
        assert "\n" not in r.json()["error"]
    r = c.post("/curate/api/verdict", content=b'{"note": "' + b"x" * 400_000 + b'"}',
               headers={"Content-Type": "application/json"})
    assert r.status_code == 413 and "larger than" in r.json()["error"]
    # Gradio's own JSON endpoints answer a 4xx too (its body parser has a depth limit of its own)
    r = c.post("/curate/gradio_api/queue/join", content=b"[" * 100_000, headers={"Content-Type": "application/json"})
    assert 400 <= r.status_code < 500, r.status_code


def test_uploads_are_closed_on_every_page(sec_server, sec_data):
    data, _, _ = sec_data
    tmp = data.parent / "gradio-tmp"
    before = sorted(tmp.rglob("*")) if tmp.exists() else []
    for who, pw in (("ada", PASSWORDS["ada"]), ("cur03", PASSWORD["cur03"])):
        c = http_login(sec_server.url, who, pw)
        for page in PAGES:
            r = c.post(f"/{page}/gradio_api/upload", files={"files": ("small.bin", b"\0" * 1000)})
            assert r.status_code == 403, (who, page, r.status_code)           # the route is closed
            r = c.post(f"/{page}/gradio_api/upload", files={"files": ("big.bin", b"\0" * 5_000_000)})
            assert r.status_code == 413, (who, page, r.status_code)           # and a big body is never read
    after = sorted(tmp.rglob("*")) if tmp.exists() else []
    assert after == before                                    # nothing was written


def test_monitoring_routes_are_for_admins_only(sec_server):
    cur = http_login(sec_server.url, "cur03", PASSWORD["cur03"])
    adm = http_login(sec_server.url, "ada", PASSWORDS["ada"])
    for path in ("/curate/monitoring", "/curate/monitoring/summary", "/curate/gradio_api/profiling/summary",
                 "/curate/gradio_api/profiling/traces", "/curate/monitoring/some-key"):
        r = cur.get(path)
        assert r.status_code == 403 and "for admins" in r.text, (path, r.status_code, r.text[:200])
        assert "for admins" not in adm.get(path).text          # admins reach Gradio's own answer


def _verdict(c, st, v="accept"):
    return c.post("/curate/api/verdict", json={"state": st, "verdict": v})


def _answer(c, st, html):
    """The curator's own answer (solve first): the first m option labels of the shown puzzle."""
    import re
    m = int(re.search(r'data-m="(\d+)"', html).group(1))
    labels = list(dict.fromkeys(re.findall(r'data-label="([A-Z])"', html)))[:m]
    return c.post("/curate/api/answer", json={"state": st, "labels": labels, "seconds": 1.0})


def test_verdicts_only_on_a_leased_or_own_puzzle(sec_server, sec_data):
    from sqlalchemy import func, select

    from db.models.curation import OptionVerdict, PuzzleVerdict, VerdictEvent
    from db.models.human import HumanAnswer
    _, _, Session = sec_data
    a = http_login(sec_server.url, "cur04", PASSWORD["cur04"])
    b = http_login(sec_server.url, "cur05", PASSWORD["cur05"])
    loaded = a.post("/curate/api/load", json={}).json()     # leased to cur04
    st_a, pid = loaded["state"], loaded["state"]["pid"]
    with Session() as s:
        n_events = s.scalar(select(func.count()).select_from(VerdictEvent))
    # cur05 opens cur04's puzzle by deep link, and tries to judge it and one of its options
    deep = b.post("/curate/api/load", json={"puzzle": pid}).json()
    st_b = deep["state"]
    assert st_b["pid"] == pid
    for r in (_answer(b, st_b, deep["html"]), _verdict(b, st_b),
              b.post("/curate/api/toggle", json={"state": st_b, "index": 1, "reason": "other"})):
        assert r.status_code == 400 and "not assigned to you" in r.json()["error"], r.text
    with Session() as s:
        assert s.scalar(select(func.count()).select_from(VerdictEvent)) == n_events
    # cur04 judges it (leased), goes back and changes the verdict (a revisit), toggles an option, undoes
    assert _answer(a, st_a, loaded["html"]).status_code == 200
    r = _verdict(a, st_a)
    assert r.status_code == 200 and r.json()["msg"].startswith(f"accept: {pid}"), r.text
    back = a.post("/curate/api/move", json={"state": r.json()["state"], "step": -1}).json()
    assert back["state"]["pid"] == pid
    r = _verdict(a, back["state"], "reject")
    assert r.status_code == 200 and r.json()["msg"].startswith(f"reject: {pid}"), r.text
    back = a.post("/curate/api/move", json={"state": r.json()["state"], "step": -1}).json()
    with Session() as s:          # a distractor's position (the answer is revealed to cur04 by now)
        from db.models import Puzzle
        rec = json.loads(s.get(Puzzle, pid).record_json)
    dist = 1 + next(i for i, o in enumerate(rec["options"]) if o["label"] not in rec["answer"])
    r = a.post("/curate/api/toggle", json={"state": back["state"], "index": dist, "reason": "other"})
    assert r.status_code == 200, r.text
    assert a.post("/curate/api/undo", json={"state": back["state"]}).status_code == 200
    # still refused for cur05, whose only contact with it was the deep link
    assert _verdict(b, st_b).status_code == 400
    from db.users.accounts import get_user
    with Session() as s:
        judged_by = s.scalars(select(PuzzleVerdict.user_id).where(PuzzleVerdict.puzzle_id == pid)).all()
        assert judged_by == [get_user(s, "cur04").id]          # one review, cur04's
        assert s.scalar(select(func.count()).select_from(OptionVerdict).where(OptionVerdict.puzzle_id == pid)) == 0
        assert s.scalar(select(func.count()).select_from(HumanAnswer).where(HumanAnswer.puzzle_id == pid)) == 1
    # a guessed puzzle id
    r = _verdict(b, {**st_b, "pid": "no-such-puzzle"})
    assert r.status_code == 400 and "no puzzle" in r.json()["error"]


def test_stop_ends_a_run_that_ignores_sigterm_within_seconds(tmp_path):
    """Stop (the Train page's button calls jobs.stop) on a training process that ignores SIGTERM, as a
    trainer stuck in one long generation does: SIGKILL after the grace period, the group is gone."""
    import json
    import os
    import subprocess
    import sys
    import time

    from app.web import jobs
    code = "import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); print('up', flush=True); time.sleep(600)"
    proc = subprocess.Popen([sys.executable, "-c", code], start_new_session=True, stdout=subprocess.PIPE)
    assert proc.stdout.readline().strip() == b"up"            # the SIGTERM handler is in place
    run_dir = tmp_path / "runs" / "stuck"
    run_dir.mkdir(parents=True)
    job = {"run_dir": str(run_dir), "pid": proc.pid, "pgid": os.getpgid(proc.pid), "set": "s", "model": "m",
           "user": "rhea", "started": time.time(), "cmd": ["mvp", "train"], "kind": "train"}
    (jobs.jobs_dir(tmp_path) / "active.json").write_text(json.dumps(job))
    try:
        t = time.perf_counter()
        out = jobs.stop(tmp_path, user="rhea", role="researcher")
        took = time.perf_counter() - t
        assert out.startswith("killed stuck") and jobs.group_pids(job["pgid"]) == [], out
        assert took >= jobs.STOP_GRACE_S, took      # the grace period was given (no upper bound: a slow machine)
        assert proc.wait(timeout=5) == -9
    finally:
        if proc.poll() is None:
            proc.kill()


@pytest.fixture(scope="module")
def train_page(sec_server, sec_data):
    """A researcher's Train page session over HTTP, a curated set and the tiny model to train on."""
    from sqlalchemy import select

    from db.models import Puzzle
    from db.sets.curated import list_sets, store_set
    from fixtures_security import gradio_page_session
    from fixtures_web import PASSWORDS
    from mvp_core.model.tiny import build_tiny_model
    data, _, Session = sec_data
    with Session() as s:
        if "sec-train-set" not in {x["name"] for x in list_sets(s)}:
            store_set(s, "sec-train-set", list(s.scalars(select(Puzzle.record_json).order_by(Puzzle.id).limit(12))),
                      0, 0, {})
            s.commit()
    if not (data / "tiny-model" / "config.json").is_file():
        build_tiny_model(data / "tiny-model", seed=0)
    c = http_login(sec_server.url, "rhea", PASSWORDS["rhea"])
    session_hash, apis = gradio_page_session(c, "train")
    return c, session_hash, apis["train_launch"], data


GOOD = {"trainer": "grpo", "set": "sec-train-set", "reward": "mvp", "max_steps": 2, "save_steps": 2,
        "num_generations": 2, "learning_rate": 1e-6, "loss_type": "dr_grpo", "beta": 0.0,
        "max_completion_length": 8, "yaml": ""}
LAUGHS = "a: &a [x, x, x, x, x, x, x, x, x]\n" + "".join(
    f"{chr(98 + i)}: &{chr(98 + i)} [*{chr(97 + i)}, *{chr(97 + i)}, *{chr(97 + i)}, *{chr(97 + i)}]\n" for i in range(8))
BAD_LAUNCHES = [   # (what is changed, the words of the one-line answer)
    ({"yaml": "learning_rate: &lr 1.0e-6\nwarmup_steps: *lr\n"}, "anchors and aliases are not allowed"),
    ({"yaml": LAUGHS}, "anchors and aliases are not allowed"),
    ({"yaml": "# " + "x" * 70_000 + "\n"}, "larger than 64 KiB"),
    ({"yaml": "temperature: .nan\n"}, "temperature"),
    ({"yaml": "top_p: .inf\n"}, "top_p"),
    ({"learning_rate": float("nan")}, "learning_rate must be a finite number"),
    ({"learning_rate": float("inf")}, "learning_rate must be a finite number"),
    ({"beta": float("nan")}, "beta must be a finite number"),
    ({"beta": float("-inf")}, "beta must be a finite number"),
    ({"learning_rate": 5.0}, "learning_rate"),
    ({"max_steps": 10 ** 9}, "max_steps"),
    ({"max_steps": float("nan")}, "max_steps must be a finite number"),
    ({"max_steps": 2.5}, "max_steps must be a whole number"),
    ({"max_completion_length": 10 ** 9}, "max_completion_length"),
    ({"num_generations": 100_000}, "num_generations"),
    ({"max_steps": None}, "max_steps is empty"),
    ({"save_steps": None}, "save_steps is empty"),
    ({"max_steps": "12; rm -rf /"}, "max_steps must be a number"),
]


def _launch(c, session_hash, fn, data, fields: dict):
    from fixtures_security import gradio_event
    v = {**GOOD, **fields}
    args = [v["trainer"], v["set"], str(data / "tiny-model"), v["reward"], v["max_steps"], v["save_steps"],
            v["num_generations"], v["learning_rate"], v["loss_type"], v["beta"], v["max_completion_length"], v["yaml"],
            [], "", False]       # train splits (the set has none), eval split, evaluate on a trained split
    return gradio_event(c, "train", session_hash, fn, args)


@pytest.mark.parametrize("fields,words", BAD_LAUNCHES, ids=[f"{next(iter(f))}-{i}" for i, (f, _) in enumerate(BAD_LAUNCHES)])
def test_train_form_refuses_unbounded_input_over_http(train_page, fields, words):
    """The Train page's launch event, called over HTTP as the page calls it: YAML with anchors or
    aliases (a billion laughs), oversized YAML, NaN / Infinity, numbers past their documented bounds
    and an empty field are each refused with one line; no run folder is made and nothing starts."""
    c, session_hash, fn, data = train_page
    runs_before = sorted(p.name for p in (data / "runs").iterdir()) if (data / "runs").is_dir() else []
    active = data / "train" / "active.json"
    active_before = active.read_text() if active.exists() else None
    ok, out = _launch(c, session_hash, fn, data, fields)
    assert not ok, out
    err = out["error"]
    assert words in err and "\n" not in err and "Traceback" not in err, err
    assert (sorted(p.name for p in (data / "runs").iterdir()) if (data / "runs").is_dir() else []) == runs_before
    assert (active.read_text() if active.exists() else None) == active_before


def test_train_form_launches_with_good_input_over_http(train_page):
    """The same call with every value in bounds does launch (so the refusals above are the bounds'
    doing, not a broken call); the run is stopped at once."""
    from app.web import jobs
    c, session_hash, fn, data = train_page
    ok, out = _launch(c, session_hash, fn, data, {})
    try:
        assert ok, out
        assert "launched" in json.dumps(out)
        job = jobs.active(data)
        assert job is not None and (data / "runs" / job["run_dir"].rsplit("/", 1)[-1]).is_dir()
    finally:
        jobs.stop(data, grace_s=5)

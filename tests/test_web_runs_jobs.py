"""The web app's job system without a browser: a launch with a wrong model is one clear line and
leaves no run folder; a real `mvp train` launched through it can be stopped only by its launcher or
an admin, a fresh process (a restarted server) re-attaches to it, the stop takes the whole process
group; job kinds are independent (one at a time each); tqdm progress is read from a job's log."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from app.web import jobs
from mvp_core.errors import UserError

SET = "jobs-set"
ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def job_env(web_data, tmp_path_factory, tiny_model_dir):
    from sqlalchemy import select

    from db.models import Puzzle
    from db.sets.curated import list_sets, store_set
    data, _db_url, _outside, Session = web_data
    with Session() as s:
        if SET not in {x["name"] for x in list_sets(s)}:
            store_set(s, SET, list(s.scalars(select(Puzzle.record_json).order_by(Puzzle.id))), 0, 0, {})
            s.commit()
    jd = tmp_path_factory.mktemp("jobs-data")
    (jd / "frames").symlink_to(data / "frames")
    shutil.copytree(tiny_model_dir, jd / "models" / "tiny")   # a typed model path must be inside the data dir
    return jd, Session, jd / "models" / "tiny"


def test_bad_model_is_one_line_and_leaves_no_run_folder(job_env, tmp_path):
    data, Session, _model = job_env
    for model, msg in (("", "choose a model"), (str(data / "nope"), "is not a directory"),
                       (str(data), "config.json"), (str(tmp_path), "outside the allowed folders")):
        with pytest.raises(UserError) as e:
            jobs.launch(data, Session, set_name=SET, model=model, yaml_text="", overrides=[], user="rhea")
        assert msg in str(e.value) and "\n" not in str(e.value)
    assert not (data / "runs").exists() or not any((data / "runs").iterdir())


@pytest.mark.slow
def test_only_launcher_or_admin_stops_and_the_group_goes(job_env):
    data, Session, model = job_env
    job = jobs.launch(data, Session, set_name=SET, model=str(model), yaml_text="",
                      overrides=["max_steps=500", "max_completion_length=4"], user="rhea")
    try:
        assert jobs.active(data)["alive"] and jobs.group_pids(job["pgid"])
        # a restarted server (a fresh process) re-attaches to the same run from the files
        code = f"from app.web import jobs; j = jobs.active({str(data)!r}); print(j['pid'], j['alive'])"
        out = subprocess.run([sys.executable, "-c", code], check=False, cwd=ROOT, capture_output=True, text=True, timeout=120,
                             env=dict(os.environ, PYTHONPATH=str(ROOT)))
        assert out.stdout.split() == [str(job["pid"]), "True"], out.stderr
        with pytest.raises(UserError, match="a run is already going"):
            jobs.launch(data, Session, set_name=SET, model=str(model), yaml_text="", overrides=[], user="rhea")
        with pytest.raises(UserError, match="only rhea .* or an admin may stop it"):
            jobs.stop(data, user="other", role="researcher")
        assert jobs.active(data)["alive"]
        # another kind is independent: nothing of that kind is going
        assert jobs.stop(data, kind="eval", user="rhea", role="researcher") == "no eval job is going"
        assert jobs.stop(data, user="rhea", role="researcher", grace_s=60).startswith(("stopped", "killed"))
        assert jobs.group_pids(job["pgid"]) == [] and not jobs.active(data)["alive"]
    finally:
        jobs.stop(data, grace_s=5)


def test_progress_is_read_from_the_log(tmp_path):
    log = tmp_path / "x.log"
    assert jobs.progress(log) == {"done": 0, "total": 0}
    log.write_text("loading\nrollout:   0%|          | 0/6 [00:00<?, ?puzzle/s]\r"
                   "rollout:  50%|#####     | 3/6 [00:01<00:01, 2.0puzzle/s, reward=0.1]\r")
    assert jobs.progress(log) == {"done": 3, "total": 6}
    assert jobs.log_tail(log).splitlines()[0] == "loading"


@pytest.mark.parametrize("kw,words", [({"num_generations": 10 ** 6}, "G must be in [1, 64]"),
                                      ({"num_generations": 0}, "G must be in [1, 64]"),
                                      ({"max_new_tokens": 10 ** 9}, "max new tokens must be in [1, 4096]"),
                                      ({"limit": -5}, "at most N puzzles must be in [0, ")])
def test_eval_job_sizes_out_of_range_are_refused_before_launch(job_env, kw, words):
    """A rollout/eval job that would run for days (or not at all) is one line; nothing starts."""
    data, _Session, _model = job_env
    before = jobs.active(data, "rollout")
    with pytest.raises(UserError, match=words.replace("[", r"\[")):
        jobs.launch_eval(data, "sqlite:///unused", kind="rollout", run_id="r", checkpoint="base", set_name=SET,
                         split="", user="ada", **kw)
    assert jobs.active(data, "rollout") == before

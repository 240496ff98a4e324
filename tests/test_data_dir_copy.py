"""A copied data directory works: the database stores paths inside the data
directory relative to it (db/paths.py), so after `shutil.copytree` and deleting the original, the
runs, their checkpoints and the videos resolve inside the copy, `mvp eval` of a checkpoint runs there
and `mvp synth` over the copied videos recognises them. On the old code every stored path still
pointed at the deleted original."""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from sqlalchemy import select, text

from app.cli.main import main

pytestmark = pytest.mark.usefixtures("torch_one_thread")


def _mvp(capsys, *argv) -> tuple[int, str]:
    capsys.readouterr()
    rc = main([str(a) for a in argv])
    out = capsys.readouterr()
    return rc, out.out + out.err


def _checkpoint(model: Path, run: Path, step: int) -> Path:
    """A checkpoint as the trainer lays it out (mvp_core/train/rundir.py): trainer_state.json last."""
    ck = run / "checkpoints" / f"step_{step:06d}"
    shutil.copytree(model, ck)
    (ck / "trainer_state.json").write_text(json.dumps({"step": step}))
    return ck


def _url(data: Path) -> str:
    return f"sqlite:///{data / 'mvp.sqlite'}"


def _session(data: Path):
    from db.engine import open_db
    return open_db(_url(data), data)


@pytest.fixture(scope="module")
def copied(sample_videos, tmp_path_factory):
    """(the copy's data directory, a one-puzzle file): a studio made by the real commands -- `mvp synth`
    over a video inside DATA/videos, `mvp tiny-model`, a run under DATA/runs (laid out as the trainer
    does) indexed and evaluated by `mvp eval` -- copied elsewhere, then the original deleted."""
    from fixtures_security import sqlite_copy
    base = tmp_path_factory.mktemp("datacopy")
    data = base / "orig" / "data"
    (data / "videos").mkdir(parents=True)
    shutil.copy(sample_videos["bikes"], data / "videos" / "bikes.mp4")
    db = ["--data", str(data), "--db", _url(data)]
    assert main(["synth", str(data / "videos"), *db, "--per-video", "2", "--quiet"]) == 0
    assert main(["tiny-model", str(data / "tiny-model")]) == 0
    run = data / "runs" / "r1"
    run.mkdir(parents=True)
    # as the trainer writes it: absolute paths of the model it started from and of itself
    (run / "config.yaml").write_text(f"trainer: grpo\nmodel: {data / 'tiny-model'}\noutput_dir: {run}\n")
    (run / "status.json").write_text(json.dumps({"state": "finished", "step": 2}))
    _checkpoint(data / "tiny-model", run, 2)
    puzzles = base / "one.jsonl"
    puzzles.write_text((data / "puzzles.jsonl").read_text().splitlines()[0] + "\n")
    assert main(["eval", "--run", str(run), "--checkpoint", "2", "--puzzles", str(puzzles), *db,
                 "--threads", "1", "--max-new-tokens", "3"]) == 0
    copy = base / "moved" / "data"
    # the whole directory; the database through SQLite's backup API, as a copy of a live one must be
    shutil.copytree(data, copy, ignore=shutil.ignore_patterns("mvp.sqlite*"))
    sqlite_copy(data / "mvp.sqlite", copy / "mvp.sqlite")
    shutil.rmtree(base / "orig")
    return copy, puzzles


def test_the_database_stores_paths_inside_the_data_directory_relative(copied):
    data, _ = copied
    with _session(data)() as s:
        assert s.execute(text("SELECT id, dir FROM runs")).all() == [("r1", "runs/r1")]
        assert s.execute(text("SELECT path FROM checkpoints")).all() == [("runs/r1/checkpoints/step_000002",)]
        assert s.execute(text("SELECT path FROM videos")).all() == [("videos/bikes.mp4",)]
        assert {p for (p,) in s.execute(text("SELECT path FROM synth_files"))} == {"videos/bikes.mp4"}
        # frame uris were relative already
        assert not any(u.startswith("/") for (u,) in s.execute(text("SELECT uri FROM options")))


def test_runs_and_checkpoints_resolve_inside_the_copy(copied):
    from app.web.models_known import known_models
    from db.models.runs import Run
    from db.runs.index import checkpoint_choices, list_runs, resolve, sync_runs
    data, _ = copied
    Session = _session(data)
    assert sync_runs(Session, data) == ["r1"]            # the copied run is the same run, not a new one
    with Session() as s:
        assert s.scalar(select(Run.id).where(Run.dir == str(data / "runs" / "r1"))) == "r1"
        (run,) = list_runs(s)
        assert run["dir"] == str(data / "runs" / "r1") and run["n_checkpoints"] == 1
        # config.yaml still says the original's tiny-model: read where the copy has it
        assert run["model_path"] == str(data / "tiny-model")
        assert checkpoint_choices(s, "r1")[1] == ("step 2", "2")            # was "step 2 (deleted)"
        _, ck, path = resolve(s, "r1", "2")
        assert Path(path) == data / "runs" / "r1" / "checkpoints" / "step_000002" and Path(path).is_dir()
        _, _, start = resolve(s, "r1", "base")
        assert Path(start, "config.json").is_file()
    paths = [p for _, p in known_models(Session, data)]
    assert str(data / "runs" / "r1" / "checkpoints" / "step_000002") in paths
    assert all(Path(p).is_dir() for p in paths)


def test_mvp_eval_of_a_checkpoint_works_on_the_copy(copied, capsys):
    data, puzzles = copied
    rc, out = _mvp(capsys, "eval", "--run", "r1", "--checkpoint", "2", "--puzzles", puzzles, "--data", data,
                   "--db", _url(data), "--threads", 1, "--max-new-tokens", 3)
    assert rc == 0 and "eval stored under run r1, step 2" in out, out     # was: step 2 ... deleted from disk


def test_the_copied_videos_resolve_and_are_recognised(copied, capsys):
    from types import SimpleNamespace

    from app.web.pages.data.ops import files_to_synth
    from db.models import Video
    from db.puzzles.synth_store import file_key, previous
    data, _ = copied
    video = data / "videos" / "bikes.mp4"
    with _session(data)() as s:
        assert s.scalars(select(Video.path)).all() == [str(video)]
        (params,) = s.execute(text("SELECT DISTINCT params_key FROM synth_files")).scalars()
        assert previous(s, file_key(video), params).status == "done"
    # the Data page: the copied video is one that already has puzzles (left out unless asked for)
    assert files_to_synth(SimpleNamespace(Session=_session(data)), [str(data / "videos")], False)[1] == [str(video)]
    n = len((data / "puzzles.jsonl").read_text().splitlines())
    rc, out = _mvp(capsys, "synth", data / "videos", "--data", data, "--db", _url(data),
                   "--per-video", "2")
    assert rc == 0, out
    assert len((data / "puzzles.jsonl").read_text().splitlines()) == n      # nothing synthesized again


def test_paths_outside_the_data_directory_and_model_names_stay_as_given(tmp_path):
    from db.paths import resolve, to_stored
    d = tmp_path / "data"
    assert to_stored(str(d / "runs" / "a"), d) == "runs/a"
    assert to_stored(str(d / "runs" / ".." / "videos" / "v.mp4"), d) == "videos/v.mp4"
    for outside in (str(tmp_path / "elsewhere" / "v.mp4"), str(tmp_path / "data2" / "v.mp4"), str(d),
                    "Qwen/Qwen2.5-VL-3B-Instruct", "data/tiny-model"):
        assert to_stored(outside, d) == outside
        assert resolve(outside, d, only_existing=True) == outside
    assert resolve("runs/a", d) == str(d / "runs" / "a")
    assert to_stored(str(d / "x"), None) == str(d / "x")


def test_a_path_recorded_in_a_copied_run_moves_with_it(tmp_path):
    from db.paths import moved_with
    new = tmp_path / "new" / "data"
    (new / "tiny-model").mkdir(parents=True)
    old_run, new_run = "/gone/data/runs/r", str(new / "runs" / "r")
    assert moved_with("/gone/data/tiny-model", old_run, new_run) == str(new / "tiny-model")
    for kept in ("/gone/data/other-model",     # not in the copy either
                 "/elsewhere/tiny-model",      # not beside the old run
                 "org/tiny-model",             # a model name
                 str(new / "tiny-model")):     # where it is
        assert moved_with(kept, old_run, new_run) == kept
    assert moved_with("/gone/data/tiny-model", "/gone/data/runs/r", "/gone/data/runs/r") == "/gone/data/tiny-model"
    assert moved_with("/gone/data/tiny-model", "/gone/data/runs/a", str(new / "runs" / "b")) == \
        "/gone/data/tiny-model"               # another run's directory: nothing known to be copied along


def test_an_older_database_is_rewritten_and_keeps_its_rows(tmp_path):
    """Migration 0008: absolute paths under the data directory become relative, others stay."""
    from db.engine import make_engine, open_db, upgrade
    from db.models.runs import Checkpoint, Run
    data = tmp_path / "data"
    data.mkdir()
    eng = make_engine(f"sqlite:///{data / 'mvp.sqlite'}")
    upgrade(eng, "0007")
    with eng.begin() as c:
        c.execute(text("INSERT INTO runs (id, name, kind, model_path, config, status, dir, created_at) VALUES "
                       "('r', 'r', 'train', :m, '{}', 'done', :d, '2026-01-01')"),
                  {"m": "/models/outside", "d": str(data / "runs" / "r")})
        c.execute(text("INSERT INTO checkpoints (run_id, step, path, created_at) VALUES ('r', 1, :p, '2026-01-01')"),
                  {"p": str(data / "runs" / "r" / "checkpoints" / "step_1")})
    eng.dispose()
    with open_db(_url(data), data)() as s:
        assert s.execute(text("SELECT dir, model_path FROM runs")).all() == [("runs/r", "/models/outside")]
        assert s.execute(text("SELECT path FROM checkpoints")).all() == [("runs/r/checkpoints/step_1",)]
        assert s.scalar(select(Run.id).where(Run.dir == str(data / "runs" / "r"))) == "r"
        assert s.scalar(select(Checkpoint.path)) == str(data / "runs" / "r" / "checkpoints" / "step_1")


def test_each_engine_reads_stored_paths_against_the_data_directory_in_use(empty_store_any, tmp_path):
    """SQLite and PostgreSQL alike: a path written under one data directory is read under the one the
    engine is opened with (`--data` pointing at a copy)."""
    from db.engine import make_engine
    from db.models.runs import Checkpoint, Run
    from db.paths import bind_data_dir
    from sqlalchemy.orm import sessionmaker
    first, second = tmp_path / "first", tmp_path / "second"
    bind_data_dir(empty_store_any.engine, first)
    with empty_store_any.Session() as s:
        s.add(Run(id="r", name="r", kind="train", model_path="org/model", dir=str(first / "runs" / "r")))
        s.flush()
        s.add(Checkpoint(run_id="r", step=3, path=str(first / "runs" / "r" / "checkpoints" / "step_3")))
        s.commit()
    eng = make_engine(empty_store_any.url)
    try:
        bind_data_dir(eng, second)
        with sessionmaker(eng)() as s:
            run = s.get(Run, "r")
            assert (run.dir, run.model_path) == (str(second / "runs" / "r"), "org/model")
            assert s.scalar(select(Checkpoint.path).where(Checkpoint.run_id == "r")) == \
                str(second / "runs" / "r" / "checkpoints" / "step_3")
    finally:
        eng.dispose()

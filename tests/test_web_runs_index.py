"""Runs and checkpoints in the database: a real `mvp train` run directory is indexed (run, each
checkpoint), `mvp rollout --run RUN --checkpoint C` stores answers under that run and checkpoint
(base model = checkpoint NULL, not a new run), `mvp eval --run` stores its report there; bad run or
checkpoint references are one-line errors; a pruned checkpoint leaves the index."""
from __future__ import annotations

import json
import shutil

import pytest
from fixtures_grpo import tiny_overrides


def mvp(capsys, *argv):
    from app.cli import main
    rc = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return rc, out, err


@pytest.fixture(scope="module")
def trained(tmp_path_factory, tiny_model_dir, model_data):
    """A 2-step run of the tiny model with checkpoints at steps 1 and 2, under DATA/runs/."""
    from app.cli import main
    data, _records = model_data
    root = tmp_path_factory.mktemp("runs-index")
    shutil.copytree(data, root / "data")
    out = root / "data" / "runs" / "tiny-run"
    rc = main(["train", *tiny_overrides(tiny_model_dir, root / "data", out, max_steps=2, save_steps=1,
                                        save_total_limit=0, reward="mvp")])
    assert rc == 0
    return root / "data", out


@pytest.mark.slow
def test_rollout_and_eval_store_under_the_runs_checkpoints(capsys, trained, one_thread):
    from sqlalchemy import func, select

    from db.engine import open_db
    from db.runs.evaluations import list_evaluations
    from db.models.runs import Checkpoint, Rollout, Run
    from db.runs.index import checkpoint_choices, sync_runs
    data, run_dir = trained
    Session = open_db(None, data)
    assert sync_runs(Session, data) == ["tiny-run"]
    assert sync_runs(Session, data) == ["tiny-run"]                     # idempotent
    with Session() as s:
        run = s.get(Run, "tiny-run")
        assert run.kind == "train" and run.status == "done" and run.dir == str(run_dir.resolve())
        assert [c.step for c in s.scalars(select(Checkpoint).order_by(Checkpoint.step))] == [1, 2]
        assert [k for _, k in checkpoint_choices(s, "tiny-run")] == ["base", "1", "2"]
    puzzles = data / "puzzles.jsonl"
    n = len(puzzles.read_text().splitlines())
    common = ["--puzzles", puzzles, "--data", data, "-G", 2, "--max-new-tokens", 6]
    for ck in ("base", "2"):
        rc, out, err = mvp(capsys, "rollout", "--run", "tiny-run", "--checkpoint", ck, *common)
        assert rc == 0, err
        assert f"{2 * n} new answers" in out and "run 'tiny-run'" in out
    with Session() as s:
        assert s.scalar(select(func.count()).select_from(Run)) == 1        # no new run was made
        per_ck = dict(s.execute(select(Rollout.checkpoint_id, func.count()).group_by(Rollout.checkpoint_id)).all())
        step2 = s.scalar(select(Checkpoint.id).where(Checkpoint.step == 2))
        assert per_ck == {None: 2 * n, step2: 2 * n}
    rc, out, err = mvp(capsys, "eval", "--run", run_dir, *common[:4], "--max-new-tokens", 6)   # a path, latest
    assert rc == 0 and "eval stored under run tiny-run, step 2" in err
    with Session() as s:
        ev = list_evaluations(s)
        assert [(e["run_id"], e["checkpoint"], e["n_puzzles"]) for e in ev] == [("tiny-run", "step 2", n)]
        assert 0 <= ev[0]["total"] <= 1 and "all" in ev[0]["report"]["groups"]

    # bad references: one line each, nothing stored
    for argv, msg in ((["--run", "no-such-run"], "no run 'no-such-run'"),
                      (["--run", "tiny-run", "--checkpoint", "7"], "has no checkpoint '7' (checkpoints: 1, 2; or base)"),
                      (["--run", "tiny-run", "--checkpoint", "x1"], "give base, latest or a step number"),
                      (["--model", data, "--checkpoint", "2"], "--checkpoint needs --run")):
        rc, _, err = mvp(capsys, "rollout", *argv, *common)
        assert rc == 2 and msg in err and "Traceback" not in err, err
    rc, _, err = mvp(capsys, "rollout", "--run", "tiny-run", *common, "--split", "test")
    assert rc == 2 and "has no splits" in err

    # a checkpoint pruned from disk: kept while answers point at it, dropped otherwise
    shutil.rmtree(run_dir / "checkpoints" / "step_000001")
    shutil.rmtree(run_dir / "checkpoints" / "step_000002")
    sync_runs(Session, data)
    with Session() as s:
        assert [c.step for c in s.scalars(select(Checkpoint))] == [2]
        labels = [lab for lab, _ in checkpoint_choices(s, "tiny-run")]
        assert labels[0].startswith("start: model ") and labels[1:] == ["step 2 (deleted)"]
    rc, _, err = mvp(capsys, "rollout", "--run", "tiny-run", "--checkpoint", "2", *common)
    assert rc == 2 and "was deleted from disk" in err
    assert json.loads((run_dir / "status.json").read_text())["state"] == "finished"


def test_a_run_directory_with_torn_or_foreign_files_is_indexed_not_fatal(tmp_path):
    """status.json that is not UTF-8 / not an object, a metrics line that is a number, a checkpoint
    folder named step_x: the run is still listed (status "created", no such checkpoint), nothing raises."""
    from db.runs.index import read_run_dir
    from mvp_core.train.rundir import read_metrics, read_status
    d = tmp_path / "run"
    (d / "checkpoints" / "step_x").mkdir(parents=True)
    (d / "checkpoints" / "step_x" / "trainer_state.json").write_text("{}")
    (d / "checkpoints" / "step_3").mkdir()
    (d / "checkpoints" / "step_3" / "trainer_state.json").write_text("{}")
    (d / "config.yaml").write_text("model: m\nmax_steps: 3\n")
    (d / "metrics.jsonl").write_bytes(b'{"step": 1, "reward": 0.5}\n3\n\xff\xfe\n{"step": 2')
    for status in (b"\xff\xfe{}", b"[1, 2]", b'{"state": "running"'):
        (d / "status.json").write_bytes(status)
        info = read_run_dir(d)
        assert info["status"] == "created" and read_status(d) == {}
        assert info["checkpoints"] == [(3, str((d / "checkpoints" / "step_3").resolve()))]
    assert read_metrics(d) == [{"step": 1, "reward": 0.5}]

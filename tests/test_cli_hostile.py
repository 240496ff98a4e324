"""Hostile and broken inputs to the `mvp` subcommands: each is one `error: ...` line and exit status 2,
never a traceback, and nothing already stored (a run's checkpoint, status, metrics; a file given as a
database; a model directory) is changed. Every case here was a traceback or a silent loss before."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from app.cli.main import main

BIG_INT = "1" * 5000          # past Python's 4300-digit int parsing limit: a ValueError, not a YAML/JSON error
DEEP = "[" * 100_000 + "]" * 100_000


def mvp(capsys, *argv) -> tuple[int, str]:
    rc = main([str(a) for a in argv])
    err = capsys.readouterr().err
    return rc, err


def one_line_error(rc: int, err: str, says: str) -> None:
    assert rc == 2, err
    assert err.startswith("error: ") and err.count("\n") == 1 and "Traceback" not in err, err
    assert says in err, err


def record(pid: str = "p1") -> dict:
    """A consistent puzzle record (its frames are never read: every case fails before that)."""
    frames = [{"t": float(i), "uri": f"frames/aa/{i}.jpg"} for i in range(4)]
    options = [{"label": lab, "uri": f"frames/bb/{lab}.jpg", "t": 1.0, "source_video_id": "v", "kind": "target",
                "difficulty": 1.0} for lab in "ABC"]
    video = {"id": "v", "path": "v.mp4", "sha256": "0" * 64, "fps": 1.0, "duration_s": 4.0, "width": 8, "height": 8}
    return {"id": pid, "video": video, "frames": frames, "mask": {"start": 1, "length": 2},
            "options": options, "answer": ["A", "B"]}


@pytest.mark.parametrize("text, says", [
    ("max_steps: 3\nmax_steps: 5\n", "line 2: key 'max_steps' is given twice"),
    ("1: 2\n", "config keys are names, not 1"),
    (f"max_steps: {BIG_INT}\n", "is not valid YAML (Exceeds the limit"),
])
@pytest.mark.parametrize("trainer", ["train", "sft"])
def test_config_files(tmp_path, capsys, trainer, text, says):
    f = tmp_path / "c.yaml"
    f.write_text(text)
    one_line_error(*mvp(capsys, trainer, f, "--print-config"), says)


BOMB = "[&a [1,1,1,1,1,1,1,1,1,1]," + ",".join(
    f"&{b} [{','.join(['*' + a] * 10)}]" for a, b in zip("abcdefgh", "bcdefghi")) + "]"


@pytest.mark.parametrize("overrides, says", [
    ([f"model={BOMB}"], "override model: line 1: YAML anchors and aliases are not allowed"),   # was a 3.5 GB line
    (["max_steps=5", "max_steps.x=1"], "override 'max_steps.x=1': max_steps is already set to 5"),
    ([f"max_steps={BIG_INT}"], "max_steps must be a finite number"),
])
def test_overrides(capsys, overrides, says):
    one_line_error(*mvp(capsys, "train", *overrides, "--print-config"), says)


@pytest.mark.parametrize("lines, says", [
    (['{"id": "p1", "x": ' + DEEP + "}"], "p.jsonl:1: not "),               # ... JSON (nested too deeply)
    (['{"id": "p1", "x": ' + BIG_INT + "}"], "p.jsonl:1: not "),             # ... JSON (Exceeds the limit ...)
    ([json.dumps({**record(), "id": ["p", 1]})], "id must be text, not ['p', 1]"),
    ([json.dumps(record("p1")), json.dumps(record("p2")), json.dumps(record("p1"))], "puzzle id 'p1' appears twice"),
])
def test_puzzle_files(tmp_path, capsys, lines, says):
    f = tmp_path / "p.jsonl"
    f.write_text("\n".join(lines) + "\n")
    # the trainer's reader (before torch loads) and rollout/eval's (before the model loads)
    for argv in (["train", f"puzzles={f}", f"model={tmp_path}", f"output_dir={tmp_path / 'run'}"],
                 ["eval", "--model", tmp_path, "--puzzles", f, "--no-db"]):
        rc, err = mvp(capsys, *argv)
        one_line_error(rc, err, says)
        assert "p.jsonl:1: not " not in says or "(nested too deeply)" in err or "(Exceeds the limit" in err
    assert not (tmp_path / "run").exists()


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    d = tmp_path_factory.mktemp("tiny") / "m"
    assert main(["tiny-model", str(d)]) == 0
    return d


def test_model_directories(tmp_path, capsys, tiny):
    import shutil
    puzzles = tmp_path / "p.jsonl"
    puzzles.write_text(json.dumps(record()) + "\n")
    for name, damage, says in (
            ("torn", lambda d: (d / "model.safetensors").write_bytes((d / "model.safetensors").read_bytes()[:5000]),
             "cannot load the model weights (Error while deserializing header"),
            ("bigint", lambda d: (d / "config.json").write_text('{"model_type": "qwen2_5_vl", "x": ' + BIG_INT + "}"),
             "config.json is not valid JSON (Exceeds the limit"),
            ("deep", lambda d: (d / "config.json").write_text('{"model_type": "qwen2_5_vl", "x": ' + DEEP + "}"),
             "config.json is not valid JSON (maximum recursion depth")):
        d = tmp_path / name
        shutil.copytree(tiny, d)
        damage(d)
        one_line_error(*mvp(capsys, "eval", "--model", d, "--puzzles", puzzles, "--no-db", "--threads", 1), says)
    # a model directory is not rebuilt over: `mvp tiny-model` into it changed the weights in silence
    before = (tiny / "model.safetensors").read_bytes()
    one_line_error(*mvp(capsys, "tiny-model", tiny, "--preset", "ci"), "is not empty")
    assert (tiny / "model.safetensors").read_bytes() == before


def _damaged_run(tmp_path: Path, tiny: Path) -> Path:
    """A run directory whose only checkpoint is torn (a disk filled up during the save)."""
    run = tmp_path / "run"
    ck = run / "checkpoints" / "step_000001"
    ck.mkdir(parents=True)
    (run / "completions").mkdir()
    (run / "config.yaml").write_text(f"model: {tiny}\nmax_steps: 3\n")
    (run / "status.json").write_text(json.dumps({"state": "finished", "step": 1}))
    (run / "metrics.jsonl").write_text(json.dumps({"step": 1, "reward": 0.5}) + "\n")
    for f in tiny.iterdir():
        (ck / f.name).write_bytes(f.read_bytes())
    w = ck / "model.safetensors"
    w.write_bytes(w.read_bytes()[: w.stat().st_size // 2])
    (ck / "optimizer.pt").write_bytes(b"PK\x03\x04 torn")
    (ck / "trainer_state.json").write_text(json.dumps({"step": 1}))
    return run


@pytest.mark.parametrize("trainer", ["train", "sft"])
def test_resume_from_a_torn_checkpoint_changes_nothing(tmp_path, capsys, tiny, trainer):
    run = _damaged_run(tmp_path, tiny)
    puzzles = tmp_path / "p.jsonl"
    puzzles.write_text(json.dumps(record()) + "\n")
    before = {p: p.read_bytes() for p in sorted(run.rglob("*")) if p.is_file() and p.name != "stdout.log"}
    rc, err = mvp(capsys, trainer, f"model={tiny}", f"puzzles={puzzles}", f"output_dir={run}", "max_steps=3",
                  "--resume")
    one_line_error(rc, err, "step_000001: model.safetensors is damaged (Error while deserializing header")
    after = {p: p.read_bytes() for p in sorted(run.rglob("*")) if p.is_file() and p.name != "stdout.log"}
    assert after == before      # status still "finished", metrics kept, the checkpoint as it was


@pytest.mark.parametrize("trainer", ["train", "sft"])
def test_resume_under_another_model_is_refused(tmp_path, capsys, tiny, trainer):
    """A resume continues the checkpoint's weights: a config naming another model (or switching
    LoRA) would train on in that model's name only, so it is refused before anything is written."""
    import shutil
    run = _damaged_run(tmp_path, tiny)
    ck = run / "checkpoints" / "step_000001"
    for f in tiny.iterdir():                                         # a whole checkpoint this time
        (ck / f.name).write_bytes(f.read_bytes())
    (ck / "trainer_state.json").write_text(json.dumps({"step": 1, "base_model": str(tiny), "lora": False}))
    (ck / "optimizer.pt").unlink()                                   # (read only after the check)
    other = tmp_path / "other-model"
    shutil.copytree(tiny, other)
    puzzles = tmp_path / "p.jsonl"
    puzzles.write_text(json.dumps(record()) + "\n")
    before = {p: p.read_bytes() for p in sorted(run.rglob("*")) if p.is_file() and p.name != "stdout.log"}
    common = (f"puzzles={puzzles}", f"output_dir={run}", "max_steps=3", "--resume")
    one_line_error(*mvp(capsys, trainer, f"model={other}", *common),
                   f"continues a run started from model {tiny}, not {other}; resume with model={tiny}")
    one_line_error(*mvp(capsys, trainer, f"model={tiny}", "lora=true", *common), "was trained with lora=false")
    after = {p: p.read_bytes() for p in sorted(run.rglob("*")) if p.is_file() and p.name != "stdout.log"}
    assert after == before


def test_run_directory_names_that_are_not_steps(tmp_path):
    from mvp_core.train.rundir import RunDir
    run = RunDir(tmp_path)
    run.create(resume=False)
    for name in ("step_000002", "step_000003.tmp", "step_abc"):    # .tmp: a save killed before its rename
        (run.checkpoints / name).mkdir()
        (run.checkpoints / name / "trainer_state.json").write_text("{}")
    assert [s for s, _ in run.list_checkpoints()] == [2]
    (run.completions / "step_xyz.parquet").write_bytes(b"")
    (run.completions / "step_000005.parquet").write_bytes(b"")
    run.metrics_file.write_text('{"step": "x"}\n{"step": 1}\n{"step": 4}\n' + "[" * 50_000 + "\n")
    run.truncate_metrics(2)
    assert run.metrics_file.read_text() == '{"step": 1}\n'
    assert sorted(p.name for p in run.completions.iterdir()) == ["step_xyz.parquet"]


def test_database_urls(tmp_path, capsys, monkeypatch):
    monkeypatch.delenv("MVP_DATABASE_URL", raising=False)
    notdb = tmp_path / "notes.sqlite"
    notdb.write_text("my notes\n")
    for url, says in (("garbage", "the database URL (--db / MVP_DATABASE_URL) is malformed"),
                      ("postgresql://[::1", "is malformed"),
                      ("postgresql+psycopg://u:secret@127.0.0.1:1/x", "cannot open database postgresql+psycopg://u:***@"),
                      (f"sqlite:///{tmp_path}/no/such/dir/x.sqlite", "(unable to open database file)"),
                      (f"sqlite:///{notdb}", "(file is not a database)"),
                      (f"sqlite:///{tmp_path}", "is not a file"),
                      ("sqlite:////dev/zero", "/dev/zero is not a file"),
                      ("nosuchdb://x", "no driver for this URL")):
        for cmd in (["sets", "list"], ["db", "current"], ["users", "list"]):
            rc, err = mvp(capsys, *cmd, "--db", url, "--data", tmp_path)
            one_line_error(rc, err, says)
            assert "secret" not in err
    assert notdb.read_text() == "my notes\n"


@pytest.mark.parametrize("flag", ["--batch-size", "--max-new-tokens"])
def test_steer_counts(tmp_path, capsys, flag):
    with pytest.raises(SystemExit) as ex:       # argparse's one line (was a transformers/pydantic traceback)
        main(["steer", "generate", "--model", str(tmp_path), "--bank", str(tmp_path / "b.pt"), flag, "0", "hi"])
    assert ex.value.code == 2 and "must be at least 1, not 0" in capsys.readouterr().err


@pytest.mark.parametrize("value, says", [("0", "must be at least 1, not 0"), ("-3", "must be at least 1, not -3"),
                                         ("eight", "not a whole number")])
def test_eval_batch_puzzles(tmp_path, capsys, value, says):
    with pytest.raises(SystemExit) as ex:       # argparse's one line, before any puzzle or model is read
        main(["eval", "--model", str(tmp_path), "--puzzles", str(tmp_path / "p.jsonl"), "--batch-puzzles", value])
    err = capsys.readouterr().err
    assert ex.value.code == 2 and says in err and "Traceback" not in err, err

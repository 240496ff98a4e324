"""`mvp rollout` / `mvp eval` with unusual-but-valid and hostile inputs, as a researcher uses them:
runs whose index is stale or whose config.yaml is damaged, `--out` paths that are directories, go
through a file or would replace the wrong file. Each works, or is one `error: ...` line with exit
status 2 before the model runs, and nothing stored is lost. Every case here failed before."""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from app.cli.main import main

pytestmark = pytest.mark.usefixtures("torch_one_thread")


def mvp(capsys, *argv) -> tuple[int, str]:
    capsys.readouterr()
    rc = main([str(a) for a in argv])
    return rc, capsys.readouterr().err


def one_line_error(rc: int, err: str, says: str) -> None:
    err = err.rsplit("\r", 1)[-1]            # a progress bar may share the line
    assert rc == 2, err
    assert err.startswith("error: ") and err.count("\n") == 1 and "Traceback" not in err, err
    assert says in err, err


def make_run(root: Path, model: Path, config: str, steps=(1,)) -> Path:
    run = root / "run"
    run.mkdir(parents=True)
    (run / "config.yaml").write_text(f"model: {model}\n{config}")
    for step in steps:
        add_checkpoint(run, model, step)
    return run


def add_checkpoint(run: Path, model: Path, step: int) -> Path:
    ck = run / "checkpoints" / f"step_{step:06d}"
    shutil.copytree(model, ck)
    (ck / "trainer_state.json").write_text(json.dumps({"step": step}))   # written last: complete
    return ck


@pytest.fixture
def one_puzzle(tmp_path, model_data) -> list:
    data, recs = model_data
    f = tmp_path / "p.jsonl"
    f.write_text(json.dumps(recs[0]) + "\n")
    return ["--puzzles", f, "--data", data, "--db", f"sqlite:///{tmp_path / 'db.sqlite'}", "--threads", 1,
            "--max-new-tokens", 3]


@pytest.mark.parametrize("config, says", [
    ("temperature: abc\n", "the run's config.yaml: temperature is 'abc', not a number"),       # was TypeError
    ("max_completion_length: x\n", "max_completion_length is 'x', not a whole number"),        # was ValueError
    ("max_pixels: lots\n", "max_pixels is 'lots', not a whole number"),                        # was ValueError
    ("top_k: [1]\n", "top_k is [1], not a whole number"),                                       # was TypeError
    ("top_k: 2.5\n", "top_k is 2.5, not a whole number"),                        # was top_k 2 in silence
    ("video_mode: maybe\n", "video_mode is 'maybe', not true or false"),         # was video mode in silence
])
def test_a_damaged_run_config_value_is_one_line(tmp_path, capsys, tiny_model_dir, one_puzzle, config, says):
    run = make_run(tmp_path, tiny_model_dir, config)
    opts = one_puzzle[:-2] if "completion" in config else one_puzzle       # without --max-new-tokens
    for cmd in ("eval", "rollout"):
        one_line_error(*mvp(capsys, cmd, "--run", run, *opts, "--no-db"), says)


def test_a_damaged_config_yaml_says_why(tmp_path, capsys, tiny_model_dir, one_puzzle):
    run = make_run(tmp_path, tiny_model_dir, "")
    (run / "config.yaml").write_text("model: [unclosed\n")
    # was "no run '<dir>' (give a run id ...)": the directory is there, its config.yaml is not valid
    one_line_error(*mvp(capsys, "eval", "--run", run, *one_puzzle), "config.yaml is not valid YAML")
    (run / "config.yaml").write_text("- a\n- b\n")
    one_line_error(*mvp(capsys, "eval", "--run", run, *one_puzzle), "must hold a mapping of config keys, not a list")
    # int() read "1_0" as step 10
    (run / "config.yaml").write_text(f"model: {tiny_model_dir}\n")
    add_checkpoint(run, tiny_model_dir, 10)
    for key in ("1_0", "+10", "step_1_0"):
        one_line_error(*mvp(capsys, "eval", "--run", run, "--checkpoint", key, *one_puzzle),
                       f"checkpoint {key!r}: give base, latest or a step number")


def test_latest_is_the_latest_checkpoint_on_disk(tmp_path, capsys, tiny_model_dir, one_puzzle):
    run = make_run(tmp_path, tiny_model_dir, "video_mode: true\n", steps=(1,))
    rc, err = mvp(capsys, "eval", "--run", run, *one_puzzle, "--out", tmp_path / "a.json")
    assert rc == 0 and "eval stored under run run, step 1" in err, err
    # the run trained on: step 2 is saved. `--run ID` (latest) took the stale index's step 1
    ck2 = add_checkpoint(run, tiny_model_dir, 2)
    rc, err = mvp(capsys, "eval", "--run", "run", *one_puzzle)
    assert rc == 0 and "eval stored under run run, step 2" in err, err
    # step 2 is deleted (save_total_limit); its row stays (an evaluation uses it). latest was step 2:
    # "checkpoint step 2 of run run was deleted from disk", though step 1 is there
    shutil.rmtree(ck2)
    for ref in ("run", run):
        rc, err = mvp(capsys, "eval", "--run", ref, *one_puzzle)
        assert rc == 0 and "eval stored under run run, step 1" in err, err
    # a run trained in video mode is asked in video mode
    rc, err = mvp(capsys, "eval", "--model", run / "checkpoints" / "step_000001", "--video-mode", *one_puzzle,
                  "--no-db", "--out", tmp_path / "b.json")
    assert rc == 0, err
    a, b = (json.loads((tmp_path / f).read_text()) for f in ("a.json", "b.json"))
    assert [p["completion"] for p in a["puzzles"]] == [p["completion"] for p in b["puzzles"]]


def test_eval_out_paths(tmp_path, capsys, tiny_model_dir, one_puzzle):
    nope = tmp_path / "no-model"          # a bad --out is found before the model loads (it was after the eval)
    (tmp_path / "adir").mkdir()
    (tmp_path / "file").write_text("x")
    (tmp_path / "keep.json").write_text("old report")
    (tmp_path / "keep.md").mkdir()
    for out, says in ((tmp_path / "adir", "adir is a directory"),
                      (tmp_path / "file" / "r.json", "file is not a directory"),
                      (tmp_path / "r.md", "give the JSON report's path"),   # the Markdown replaced the JSON
                      (tmp_path / "keep.json", "keep.md is a directory")):  # the JSON was replaced, then an error
        one_line_error(*mvp(capsys, "eval", "--model", nope, *one_puzzle, "--no-db", "--out", out), says)
    assert (tmp_path / "keep.json").read_text() == "old report" and not (tmp_path / "r.md").exists()
    # an existing report is replaced whole (written beside it, then renamed over it); a missing folder is made
    old = tmp_path / "new" / "r.json"
    old.parent.mkdir()
    old.write_text("old report")
    (tmp_path / "alias.json").hardlink_to(old)
    for out in (old, tmp_path / "missing" / "dir" / "r.json"):
        rc, err = mvp(capsys, "eval", "--model", tiny_model_dir, *one_puzzle, "--no-db", "--out", out)
        assert rc == 0, err
        assert json.loads(out.read_text())["n_puzzles"] == 1 and "## Evaluation" in out.with_suffix(".md").read_text()
        assert sorted(p.name for p in out.parent.iterdir()) == ["r.json", "r.md"]     # no temporary left
    assert (tmp_path / "alias.json").read_text() == "old report"


def test_rollout_out_paths(tmp_path, capsys, one_puzzle):
    nope = tmp_path / "no-model"          # checked before the model loads; each was a pyarrow traceback
    (tmp_path / "adir").mkdir()
    (tmp_path / "report.json").write_text('{"a": 1}')
    for out, says in ((tmp_path / "adir", "adir is a directory"),
                      (tmp_path / "report.json", "report.json is not a Parquet file of answers"),
                      (tmp_path / "report.json" / "a.parquet", "report.json is not a directory")):
        one_line_error(*mvp(capsys, "rollout", "--model", nope, *one_puzzle, "--no-db", "--out", out), says)
    assert (tmp_path / "report.json").read_text() == '{"a": 1}'


@pytest.mark.parametrize("flags, says", [
    (["--temperature", "inf"], "temperature must be in [0.001, 10], got inf"),
    (["--temperature", "1e-40"], "temperature must be in [0.001, 10], got 1e-40"),
    (["--repetition-penalty", "1e-300"], "repetition_penalty must be in [0.001, 10] (1: off), got 1e-300"),
])
def test_sampler_values_that_overflow_float32_logits(tmp_path, capsys, tiny_model_dir, one_puzzle, flags, says):
    # each passed the range check (> 0) and sampling failed mid-run: "RuntimeError: probability tensor
    # contains either `inf`, `nan` or element < 0"
    for cmd in (["eval", "--sample"], ["rollout", "-G", 1]):
        one_line_error(*mvp(capsys, *cmd, "--model", tiny_model_dir, *one_puzzle, "--no-db", *flags,
                            *(["--out", tmp_path / "a.parquet"] if cmd[0] == "rollout" else [])), says)
    assert not (tmp_path / "a.parquet").exists()


@pytest.mark.parametrize("command", ["eval", "rollout"])
def test_split_named_as_exports_name_it(command):
    """An export writes `validation` for the set's `val` split (mvp_core/export/formats.py); a
    researcher who types the name they read there gets that split, not "no puzzles in split"."""
    from app.cli.main import build_parser
    for typed, meant in (("validation", "val"), ("val", "val"), ("test", "test"), ("train", "train")):
        args = build_parser().parse_args([command, "--model", "m", "--puzzles", "p.jsonl", "--split", typed])
        assert args.split == meant

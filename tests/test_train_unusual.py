"""`mvp train` / `mvp sft` under unusual-but-valid and hostile settings, as a user of TRL or
LLaMA-Factory would try them: every case either trains and finishes, or stops with one line
`error: ...` (exit 2) before anything is written that a corrected rerun would trip over.

Defects these tests pinned (each failed before its fix):
- a bad `model` path (or a model directory that is not one) stopped with a one-line error, but
  only after config.yaml and status.json (state "running") were written: the corrected rerun into
  the same output_dir was then refused ("already holds a run"). GRPO (loop.py) and SFT (sft.py).
- a bad `eval_puzzles` file did the same in GRPO (the held-out set was read after the run began).
- `temperature=1e-300` (inside the documented range "> 0") crashed in the sampler with a torch
  traceback (logits / temperature overflow to inf); the config now refuses temperatures < 1e-3."""
from __future__ import annotations

import subprocess

import pytest
from fixtures_grpo import PYTHON, ROOT, mvp_env, tiny_overrides

from mvp_core.errors import UserError
from mvp_core.train.config import load_config
from mvp_core.train.loop import train
from mvp_core.train.rundir import read_metrics, read_status
from mvp_core.train.sft import train_sft
from mvp_core.train.sft_config import load_sft_config


@pytest.fixture(autouse=True)
def _threads(torch_one_thread):
    yield


def _grpo(model_dir, data, out, **extra):
    base = dict(max_steps=1, save_steps=1, max_completion_length=4, num_generations=2,
                per_device_train_batch_size=2, gradient_accumulation_steps=1)
    base.update(extra)
    return tiny_overrides(model_dir, data, out, **base)


def _sft(model_dir, data, out, **extra):
    base = {"model": str(model_dir), "puzzles": str(data / "puzzles.jsonl"), "output_dir": str(out),
            "per_device_train_batch_size": 2, "max_completion_length": 4, "max_pixels": 3136,
            "max_steps": 1, "save_steps": 1, "seed": 0}
    base.update(extra)
    return [f"{k}={v}" for k, v in base.items()]


def test_cli_bad_model_path_leaves_no_run_behind(tiny_model_dir, model_data, tmp_path):
    """`mvp train model=<typo>`: one line, exit 2, and the corrected command then runs in the same
    output_dir (before: config.yaml + status "running" were left and the rerun was refused)."""
    data, _ = model_data
    out = tmp_path / "run"
    bad = _grpo(tmp_path / "no-such-model", data, out)
    p = subprocess.run([PYTHON, "-m", "app.cli", "train", *bad], cwd=ROOT, env=mvp_env(),
                       capture_output=True, text=True, timeout=120)
    lines = [ln for ln in p.stderr.splitlines() if ln.startswith("error:")]
    assert p.returncode == 2 and len(lines) == 1 and "no-such-model" in lines[0], p.stderr[-2000:]
    assert "Traceback" not in p.stderr
    assert not (out / "config.yaml").exists() and not (out / "status.json").exists()
    summary = train(load_config(None, _grpo(tiny_model_dir, data, out)))
    assert summary["state"] == "finished" and read_status(out)["state"] == "finished"


def test_not_a_model_directory_then_rerun(tiny_model_dir, model_data, tmp_path):
    """A directory that holds no model (the data dir given as model=) is refused before the run starts."""
    data, _ = model_data
    out = tmp_path / "run"
    with pytest.raises(UserError, match="no config.json"):
        train(load_config(None, _grpo(data, data, out)))
    assert not (out / "config.yaml").exists()
    assert train(load_config(None, _grpo(tiny_model_dir, data, out)))["state"] == "finished"


@pytest.mark.parametrize("eval_file", ["missing.jsonl", "puzzles.jsonl#val"])
def test_bad_eval_puzzles_leave_no_run_behind(tiny_model_dir, model_data, tmp_path, eval_file):
    """A missing held-out file, or a split it does not hold, stops the run before it is begun."""
    data, _ = model_data
    out = tmp_path / "run"
    name, _, split = eval_file.partition("#")
    extra = {"eval_puzzles": str(data / name) if name != "missing.jsonl" else str(tmp_path / name),
             "eval_split": split}
    with pytest.raises(UserError) as e:
        train(load_config(None, _grpo(tiny_model_dir, data, out, **extra)))
    assert "\n" not in str(e.value)
    assert not (out / "config.yaml").exists() and not (out / "status.json").exists()
    assert train(load_config(None, _grpo(tiny_model_dir, data, out)))["state"] == "finished"


def test_sft_bad_model_path_then_rerun(tiny_model_dir, model_data, tmp_path):
    data, _ = model_data
    out = tmp_path / "sft"
    with pytest.raises(UserError, match="not a directory"):
        train_sft(load_sft_config(None, _sft(tmp_path / "no-such-model", data, out)))
    assert not (out / "config.yaml").exists() and not (out / "status.json").exists()
    assert train_sft(load_sft_config(None, _sft(tiny_model_dir, data, out)))["state"] == "finished"
    assert [r["step"] for r in read_metrics(out)] == [1]


def test_sft_resume_keeps_run_after_a_bad_model_on_resume(tiny_model_dir, model_data, tmp_path):
    """--resume with a mistyped model stops on the lineage check and leaves the run as it was."""
    data, _ = model_data
    out = tmp_path / "sft"
    train_sft(load_sft_config(None, _sft(tiny_model_dir, data, out, per_device_train_batch_size=1, lora="true")))
    before = (out / "metrics.jsonl").read_bytes(), (out / "config.yaml").read_bytes()
    with pytest.raises(UserError):
        train_sft(load_sft_config(None, _sft(tmp_path / "typo", data, out, max_steps=2, lora="true",
                                             per_device_train_batch_size=1)), resume=True)
    assert ((out / "metrics.jsonl").read_bytes(), (out / "config.yaml").read_bytes()) == before
    assert read_status(out)["state"] == "finished"
    s = train_sft(load_sft_config(None, _sft(tiny_model_dir, data, out, max_steps=2, lora="true",
                                             per_device_train_batch_size=1)), resume=True)
    assert s["state"] == "finished" and [r["step"] for r in read_metrics(out)] == [1, 2]


@pytest.mark.parametrize("value", ["1e-300", "0"])
def test_vanishing_temperature_is_a_config_error(value):
    """Before: temperature=1e-300 passed the config and crashed in torch.multinomial (traceback, exit 1)."""
    with pytest.raises(UserError) as e:
        load_config(None, [f"temperature={value}"])
    assert "temperature must be >= 0.001" in str(e.value) and "\n" not in str(e.value)


def test_smallest_allowed_temperature_trains(tiny_model_dir, model_data, tmp_path):
    data, _ = model_data
    s = train(load_config(None, _grpo(tiny_model_dir, data, tmp_path / "run", temperature="0.001")))
    assert s["state"] == "finished"


def test_cut_groups_share_prompt_parity_lora_kl(tiny_model_dir, model_data, tmp_path):
    """G=3 with micro-batches of 4 (groups cut across micro-batches), LoRA with its adapter-disabled
    reference (beta > 0): the one-prompt-per-group path gives the plain forward's metrics."""
    data, _ = model_data
    rows = {}
    for sp in ("true", "false"):
        out = tmp_path / f"sp_{sp}"
        s = train(load_config(None, _grpo(tiny_model_dir, data, out, share_prompt=sp, num_generations=3,
                                          per_device_train_batch_size=4, gradient_accumulation_steps=3,
                                          beta=0.04, lora="true", logprob_batch_size=1, max_steps=2,
                                          learning_rate="1e-2")))
        assert s["state"] == "finished"
        rows[sp] = read_metrics(out)
    for a, b in zip(rows["true"], rows["false"], strict=True):
        for k in ("reward", "loss", "kl", "grad_norm", "entropy"):
            assert a[k] == pytest.approx(b[k], rel=1e-4, abs=1e-6), (k, a[k], b[k])
    assert rows["true"][1]["kl"] > 0

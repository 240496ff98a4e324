"""`mvp sft`: the run directory contract (config, metrics with held-out eval, checkpoints, status),
exact resume after SIGTERM, loss on completion tokens only, one-line config errors."""
from __future__ import annotations

import os
import signal
import subprocess

import pytest
import torch
import yaml
from fixtures_grpo import PYTHON, ROOT, mvp_env
from safetensors.torch import load_file

from mvp_core.train.model_setup import end_ids
from mvp_core.train.rundir import read_metrics, read_status
from mvp_core.train.sft import sft_step, target_text, train_sft
from mvp_core.train.sft_config import load_sft_config


def _settings(model_dir, data, out, **extra):
    base = {"model": model_dir, "puzzles": data / "puzzles.jsonl", "output_dir": out, "max_steps": 4,
            "save_steps": 2, "save_total_limit": 0, "per_device_train_batch_size": 2, "learning_rate": "1e-3",
            "lr_scheduler_type": "constant", "max_pixels": 3136, "freeze_vision": "false",
            "eval_puzzles": data / "puzzles.jsonl", "eval_steps": 2, "max_completion_length": 8}
    base.update(extra)
    return [f"{k}={v}" for k, v in base.items()]


def _weights(run, step):
    return load_file(str(run / "checkpoints" / f"step_{step:06d}" / "model.safetensors"))


@pytest.fixture(scope="module")
def full_sft(tiny_model_dir, model_data, tmp_path_factory):
    torch.set_num_threads(1)
    out = tmp_path_factory.mktemp("sft") / "run"
    cfg = load_sft_config(None, _settings(tiny_model_dir, model_data[0], out))
    return out, train_sft(cfg)


def test_run_directory(full_sft, model_data):
    run, summary = full_sft
    assert summary["state"] == "finished" and summary["step"] == 4
    conf = yaml.safe_load((run / "config.yaml").read_text())
    assert conf["run_info"]["kind"] == "sft" and conf["run_info"]["set"]["n_puzzles"] == len(model_data[1])
    assert load_sft_config(run / "config.yaml").max_steps == 4          # config.yaml loads back
    rows = read_metrics(run)
    assert [r["step"] for r in rows] == [1, 2, 3, 4]
    assert rows[-1]["loss"] < rows[0]["loss"]                           # it learns the 4 targets
    for r in rows:
        assert r["lr"] == pytest.approx(1e-3) and r["step_s"] > 0 and 0 <= r["token_accuracy"] <= 1
    assert "eval_reward" not in rows[0] and "eval_reward" in rows[1]   # eval_steps=2
    assert rows[3]["eval_n"] == len(model_data[1]) and 0 <= rows[3]["eval_exact"] <= 1
    assert sorted(p.name for p in (run / "checkpoints").iterdir()) == ["step_000002", "step_000004"]
    assert read_status(run) | {"state": "finished", "kind": "sft"} == read_status(run)
    from mvp_core.model.policy import load_policy
    load_policy(run / "checkpoints" / "step_000004")                    # a checkpoint is a model


def test_resume_after_sigterm_is_exact(full_sft, tiny_model_dir, model_data, tmp_path):
    cut = load_sft_config(None, _settings(tiny_model_dir, model_data[0], tmp_path / "cut"))

    def stop_at_2(step, metrics):
        if step == 2:
            os.kill(os.getpid(), signal.SIGTERM)
    assert train_sft(cut, on_step=stop_at_2)["state"] == "stopped"
    assert read_status(tmp_path / "cut")["state"] == "stopped"
    assert train_sft(cut, resume=True)["step"] == 4
    a, b = _weights(full_sft[0], 4), _weights(tmp_path / "cut", 4)
    assert all(torch.allclose(a[k], b[k], atol=1e-6, rtol=0) for k in a)
    assert not torch.equal(a["lm_head.weight"], _weights(full_sft[0], 2)["lm_head.weight"])
    assert [r["loss"] for r in read_metrics(full_sft[0])] == [r["loss"] for r in read_metrics(tmp_path / "cut")]


def test_loss_counts_completion_tokens_only(tiny_policy, model_data, tiny_model_dir):
    from mvp_core.train.data import PuzzleSet
    model, proc = tiny_policy
    cfg = load_sft_config(None, _settings(tiny_model_dir, model_data[0], "unused"))
    recs = model_data[1][:2]
    out = sft_step(cfg, model, proc, PuzzleSet.open(cfg), recs, end_ids(model, proc))
    want = sum(len(proc.tokenizer(target_text(r, "empty"), add_special_tokens=False)["input_ids"]) + 1 for r in recs)
    assert out["tokens"] == want                          # targets + eos, no prompt token
    model.zero_grad(set_to_none=True)
    assert target_text(recs[0], "times").startswith("<think>1:") and target_text(recs[0], "times").endswith(
        f"<answer>{', '.join(recs[0]['answer'])}</answer>")


def test_input_cache_is_bounded_by_bytes_and_keeps_the_recent(tiny_policy, model_data, tiny_model_dir):
    """Encoded puzzles stay cached up to a byte budget, least recently used out first, and a cached
    puzzle's inputs are the ones a fresh encode gives."""
    from mvp_core.train.data import PuzzleSet
    _, proc = tiny_policy
    cfg = load_sft_config(None, _settings(tiny_model_dir, model_data[0], "unused"))
    recs = model_data[1][:4]
    one = PuzzleSet.open(cfg)
    first = one.encode(recs[0], proc)
    size = one._cache_bytes
    assert size > 0 and one.encode(recs[0], proc) is first                       # a hit
    small = PuzzleSet.open(cfg)
    for r in recs:
        small.encode(r, proc, max_bytes=int(2.5 * size))
    held = list(small._cache)
    assert held[-1] == recs[3]["id"] and recs[0]["id"] not in held and small._cache_bytes <= 2.5 * size
    again = small.encode(recs[0], proc, max_bytes=int(2.5 * size))                 # evicted: encoded anew
    assert all(torch.equal(again[k], first[k]) for k in first if isinstance(first[k], torch.Tensor))


def test_scan_target_lists_options_up_to_each_masked_frames_option():
    rec = {"frames": [{"t": 3.0}, {"t": 4.0}, {"t": 5.0}, {"t": 6.0}, {"t": 7.0}], "mask": {"start": 2, "length": 2},
           "options": [{"t": 1.0, "label": "A"}, {"t": 6.0, "label": "B"}, {"t": 9.0, "label": "C"},
                       {"t": 5.0, "label": "D"}],
           "answer": ["D", "B"]}
    assert target_text(rec, "scan") == ("<think>1:3 2:4 5:7 | 5: 1:A 6:B 9:C 5:D | 6: 1:A 6:B</think>"
                                        "<answer>D, B</answer>")
    one = dict(rec, mask={"start": 1, "length": 1}, answer=["A"])
    assert target_text(one, "scan") == "<think>1:3 3:5 4:6 5:7 | 4: 1:A</think><answer>A</answer>"


def test_bad_config_is_one_line(tmp_path):
    from mvp_core.errors import UserError
    for bad, msg in (("learning_rate=-1", "learning_rate"), ("target=long", "target")):
        with pytest.raises(UserError, match=msg):
            load_sft_config(None, [bad])
    r = subprocess.run([PYTHON, "-m", "app.cli", "sft", f"output_dir={tmp_path}", "max_step=3"], cwd=ROOT,
                       env=mvp_env(), capture_output=True, text=True, timeout=120)
    assert r.returncode == 2 and r.stderr.startswith("error: ") and "Traceback" not in r.stderr, r.stderr
    assert "max_step" in r.stderr and len(r.stderr.strip().splitlines()) == 1

"""`mvp train` under torchrun with 2 CPU processes over gloo: the groups are split across the
ranks, rewards are gathered before normalising, and one run directory is written; with fsdp=true
the checkpoint holds the full weights and --resume loads the sharded optimizer state. `mvp sft`
under torchrun takes the same steps as one process given both ranks' puzzles.

Two torchrun launches carry the three `mvp train` runs (on 2 cores a launch costs more than the
tiny runs themselves): see `torchrun_runs`."""
from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

import pyarrow.parquet as pq
import pytest
import torch
import yaml
from fixtures_grpo import ROOT, mvp_env, tiny_overrides
from safetensors.torch import load_file

from mvp_core.train.rundir import read_metrics, read_status

TORCHRUN = Path(ROOT) / ".venv" / "bin" / "torchrun"


def _torchrun(args: list[str]) -> subprocess.CompletedProcess:
    r = subprocess.run([str(TORCHRUN), "--standalone", "--nproc_per_node", "2", *args], cwd=ROOT, env=mvp_env(),
                       capture_output=True, text=True, timeout=420)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    return r


@pytest.fixture(scope="module")
def torchrun_runs(tiny_model_dir, model_data, tmp_path_factory):
    """{"ddp": run dir, "fsdp": run dir, "sft": run dir, "out": [stdout of each `mvp train`]}. Launch
    1 runs the DDP run, the first FSDP run and the SFT run in the same two workers
    (tests/grpo_torchrun.py; SFT before FSDP, whose device mesh outlives its group); launch 2 is the
    plain `torchrun -m app.cli train ... --resume` in fresh processes (FSDP keeps a device mesh
    per process that outlives its process group, so an FSDP resume needs new processes anyway)."""
    data, _ = model_data
    base = tmp_path_factory.mktemp("torchrun")
    ddp, fsdp, sft = base / "ddp", base / "fsdp", base / "sft"

    def fsdp_args(steps):
        return tiny_overrides(tiny_model_dir, data, fsdp, max_steps=steps, save_steps=1, max_completion_length=4,
                              fsdp="true")
    calls = [
        # each rank's 8 completions in one micro-batch: the rollout decodes from the loss's prompt forward
        ["train", *tiny_overrides(tiny_model_dir, data, ddp, max_steps=2, save_steps=2, max_completion_length=6,
                                  per_device_train_batch_size=8, gradient_accumulation_steps=1)],
        ["sft", *sft_settings(tiny_model_dir, data, sft, per_device_train_batch_size=2)],
        ["train", *fsdp_args(1)],
    ]
    (base / "calls.json").write_text(json.dumps(calls))
    r = _torchrun([str(ROOT / "tests" / "grpo_torchrun.py"), str(base / "calls.json")])
    out = re.split(r"=== mvp call \d exit 0\n", r.stdout)
    assert len(out) == 4, r.stdout[-3000:]        # three finished command lines (+ the empty tail)
    resumed = _torchrun(["-m", "app.cli", "train", *fsdp_args(2), "--resume"])
    return {"ddp": ddp, "fsdp": fsdp, "sft": sft, "out": [out[0], out[2], resumed.stdout, out[1]]}


def sft_settings(model_dir, data, out, **extra) -> list[str]:
    base = {"model": model_dir, "puzzles": data / "puzzles.jsonl", "output_dir": out, "max_steps": 2,
            "save_steps": 2, "learning_rate": "1e-3", "lr_scheduler_type": "constant", "max_pixels": 3136,
            "freeze_vision": "false", "max_completion_length": 8, "seed": 0,
            "eval_puzzles": data / "puzzles.jsonl", "eval_steps": 2, "eval_limit": 2}
    base.update(extra)
    return [f"{k}={v}" for k, v in base.items()]


@pytest.mark.slow
def test_torchrun_sft_takes_the_steps_one_process_takes(torchrun_runs, tiny_model_dir, model_data, tmp_path):
    """2 ranks x 2 puzzles: the same loss, token accuracy and weights as one process taking the 4
    puzzles as 2 micro-batches of 2 (the same micro-batches: rank k's share is micro-batch k)."""
    from app.cli import main
    run = torchrun_runs["sft"]
    assert "2 process(es)" in torchrun_runs["out"][3]
    conf = yaml.safe_load((run / "config.yaml").read_text())
    assert conf["run_info"]["world_size"] == 2 and conf["run_info"]["puzzles_per_step"] == 4
    one = tmp_path / "one"
    torch.set_num_threads(1)
    assert main(["sft", *sft_settings(tiny_model_dir, model_data[0], one, per_device_train_batch_size=2,
                                      gradient_accumulation_steps=2)]) == 0
    two_m, one_m = read_metrics(run), read_metrics(one)
    assert [m["step"] for m in two_m] == [1, 2] and read_status(run)["state"] == "finished"
    assert two_m[0]["token_accuracy"] == one_m[0]["token_accuracy"]         # step 1: the same weights
    for a, b in zip(two_m, one_m):
        # later steps' weights may differ in the last bit (the gradient sums' order): one token's argmax at most
        assert a["loss"] == pytest.approx(b["loss"], rel=1e-5)
        assert abs(a["token_accuracy"] - b["token_accuracy"]) <= 1 / (4 * b["completion_length"]) + 1e-9
        assert a["completion_length"] == b["completion_length"]
        assert a["grad_norm"] == pytest.approx(b["grad_norm"], rel=1e-4)     # Adam would hide a scale error
    assert "eval_reward" in two_m[1]                           # held-out answered by rank 0
    w2 = load_file(str(run / "checkpoints" / "step_000002" / "model.safetensors"))
    w1 = load_file(str(one / "checkpoints" / "step_000002" / "model.safetensors"))
    assert max(float((w2[k] - w1[k]).abs().max()) for k in w1) < 1e-5
    orig = load_file(str(Path(tiny_model_dir) / "model.safetensors"))
    assert any(not torch.equal(w2[k], orig[k]) for k in orig)          # and it did train


@pytest.mark.slow
def test_torchrun_two_processes_one_run_dir(torchrun_runs):
    run = torchrun_runs["ddp"]
    assert "2 process(es) on cpu" in torchrun_runs["out"][0]

    conf = yaml.safe_load((run / "config.yaml").read_text())
    assert conf["run_info"]["world_size"] == 2
    assert conf["run_info"]["puzzles_per_step"] == 4          # 2 puzzles (8 completions) per rank
    rows = read_metrics(run)
    assert [m["step"] for m in rows] == [1, 2]                 # written once, by rank 0
    assert read_status(run)["state"] == "finished"
    assert (run / "checkpoints" / "step_000002" / "model.safetensors").is_file()
    assert {p.name for p in (run / "checkpoints" / "step_000002").glob("rng_rank*.pt")} == {
        "rng_rank0.pt", "rng_rank1.pt"}
    for step in (1, 2):
        t = pq.read_table(run / "completions" / f"step_{step:06d}.parquet").to_pylist()
        assert len(t) == 16 and {x["rank"] for x in t} == {0, 1}
        by_rank = {k: {x["puzzle_id"] for x in t if x["rank"] == k} for k in (0, 1)}
        # whole groups per rank: every puzzle's G=4 completions were sampled on one process
        for pid in by_rank[0] | by_rank[1]:
            g = [x for x in t if x["puzzle_id"] == pid]
            assert len({x["rank"] for x in g}) == 1 and len(g) % 4 == 0
            assert abs(sum(x["advantage"] for x in g)) < 1e-4
        # metrics are over both ranks' samples
        assert rows[step - 1]["reward"] == pytest.approx(sum(x["total"] for x in t) / 16, abs=1e-6)


@pytest.mark.slow
def test_torchrun_fsdp_saves_full_checkpoint_and_resumes(torchrun_runs):
    """fsdp=true: parameters sharded over the 2 processes; the checkpoint holds the full weights
    (same tensors and shapes as the model on disk) and --resume loads the sharded optimizer state."""
    run = torchrun_runs["fsdp"]
    first, resumed = torchrun_runs["out"][1], torchrun_runs["out"][2]
    assert "2 process(es) on cpu" in first and "resuming from" not in first
    saved = load_file(str(run / "checkpoints" / "step_000001" / "model.safetensors"))
    orig = load_file(str(Path(yaml.safe_load((run / "config.yaml").read_text())["model"]) / "model.safetensors"))
    assert {k: v.shape for k, v in saved.items()} == {k: v.shape for k, v in orig.items()}
    assert any(not (saved[k] == orig[k]).all() for k in saved)      # trained, not the initial weights
    assert "resuming from" in resumed and "step_000001" in resumed
    assert [m["step"] for m in read_metrics(run)] == [1, 2] and read_status(run)["state"] == "finished"
    # resumed with max_steps 1 -> 2: step 2 runs on the new linear schedule (not the old one's lr 0)
    assert read_metrics(run)[1]["lr"] == pytest.approx(5e-4)
    step2 = load_file(str(run / "checkpoints" / "step_000002" / "model.safetensors"))
    assert any(not torch.equal(saved[k], step2[k]) for k in saved)

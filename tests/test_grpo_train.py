"""End-to-end GRPO runs of the tiny Qwen2.5-VL on puzzles over real video frames: the run
directory, exact resume after SIGTERM, `mvp train` as a process that SIGTERM stops cleanly."""
from __future__ import annotations

import os
import signal
import subprocess
import time

import pyarrow.parquet as pq
import pytest
import torch
import yaml
from fixtures_grpo import PYTHON, ROOT, mvp_env, tiny_overrides
from safetensors.torch import load_file

from mvp_core.train.config import load_config
from mvp_core.train.loop import train
from mvp_core.train.rundir import METRIC_FIELDS, read_metrics, read_status


@pytest.fixture(autouse=True)
def _threads(one_thread):
    yield


def _weights(run_dir, step):
    return load_file(str(run_dir / "checkpoints" / f"step_{step:06d}" / "model.safetensors"))


COMMON = dict(max_steps=10, save_steps=4, save_total_limit=0, max_completion_length=6, beta=0.04)


@pytest.fixture(scope="module")
def full_run(tiny_model_dir, model_data, tmp_path_factory):
    """One uninterrupted 10-step run (KL on, checkpoints every 4 steps and at the end), shared by
    the run-directory test and the exact-resume test."""
    import torch
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        out = tmp_path_factory.mktemp("grpo_full") / "run"
        summary = train(load_config(None, tiny_overrides(tiny_model_dir, model_data[0], out, **COMMON)))
    finally:
        torch.set_num_threads(before)
    return out, summary


@pytest.mark.slow
def test_run_directory_contents(full_run, model_data):
    run, summary = full_run
    assert summary["state"] == "finished" and summary["step"] == 10

    conf = yaml.safe_load((run / "config.yaml").read_text())
    info = conf["run_info"]
    assert info["set"]["n_puzzles"] == len(model_data[1])
    import hashlib
    assert info["set"]["sha256"] == hashlib.sha256((model_data[0] / "puzzles.jsonl").read_bytes()).hexdigest()
    assert conf["beta"] == 0.04 and conf["num_generations"] == 4
    # config.yaml loads back as a config (run_info is ignored)
    assert load_config(run / "config.yaml").max_steps == 10

    rows = read_metrics(run)
    assert [r["step"] for r in rows] == list(range(1, 11))
    for r in rows:
        assert set(METRIC_FIELDS) <= set(r)
        assert 0.0 <= r["reward"] <= 1.0 and r["completion_length"] > 0 and r["step_s"] > 0
        assert r["kl"] >= 0.0 and r["entropy"] > 0
    assert rows[0]["kl"] == pytest.approx(0.0, abs=1e-6)   # before the first update policy == reference
    assert rows[2]["kl"] > 0.0                              # after two updates they differ

    parts = sorted((run / "completions").glob("step_*.parquet"))
    assert [p.name for p in parts] == [f"step_{s:06d}.parquet" for s in range(1, 11)]
    t = pq.read_table(parts[0]).to_pylist()
    assert len(t) == 8                                      # 2 puzzles x G=4
    from mvp_core.model.rollout import SCORED_COMPLETION, TRAINING_COLUMNS
    assert list(t[0]) == [name for name, _ in SCORED_COMPLETION + TRAINING_COLUMNS]   # the one schema
    # advantages are centred within each group
    for pid in {r["puzzle_id"] for r in t}:
        assert abs(sum(r["advantage"] for r in t if r["puzzle_id"] == pid)) < 1e-4

    cps = sorted(p.name for p in (run / "checkpoints").iterdir())
    assert cps == ["step_000004", "step_000008", "step_000010"]     # every save_steps, and at the end
    last = run / "checkpoints" / "step_000010"
    for f in ("model.safetensors", "config.json", "optimizer.pt", "scheduler.pt", "rng_rank0.pt",
              "trainer_state.json", "tokenizer.json"):
        assert (last / f).is_file(), f
    assert "step 10" in (run / "stdout.log").read_text()
    assert read_status(run)["state"] == "finished"
    # a checkpoint is a loadable policy
    from mvp_core.model.policy import load_policy
    model, _ = load_policy(last)
    assert torch.equal(model.state_dict()["lm_head.weight"], _weights(run, 10)["lm_head.weight"])


@pytest.mark.slow
def test_resume_after_sigterm_matches_uninterrupted(full_run, grpo_settings, tmp_path):
    """10 steps straight vs. SIGTERM after step 6 + --resume: same step-10 weights (the KL term's
    frozen reference is reloaded on resume too)."""
    full = full_run[0]
    cut = load_config(None, grpo_settings(tmp_path / "cut", **COMMON))

    # whatever handler the process had before (Ray's, when a Ray test ran earlier in this process)
    handler_before = signal.getsignal(signal.SIGTERM)

    def sigterm_at_6(step, metrics):
        if step == 6:
            os.kill(os.getpid(), signal.SIGTERM)      # the real signal, the real handler
    first = train(cut, on_step=sigterm_at_6)
    assert first == {**first, "state": "stopped", "step": 6}
    assert read_status(tmp_path / "cut")["state"] == "stopped"
    assert (tmp_path / "cut" / "checkpoints" / "step_000006").is_dir()
    assert signal.getsignal(signal.SIGTERM) is handler_before   # handlers restored after the run
    second = train(cut, resume=True)
    assert second["state"] == "finished" and second["step"] == 10

    a, b = _weights(full, 10), _weights(tmp_path / "cut", 10)
    assert a.keys() == b.keys()
    for k in a:
        assert torch.allclose(a[k], b[k], atol=1e-6, rtol=0), k
    # and the weights did move after the cut: the comparison is not trivially true
    assert not torch.equal(a["lm_head.weight"], _weights(full, 4)["lm_head.weight"])
    assert not torch.equal(a["lm_head.weight"], _weights(tmp_path / "cut", 6)["lm_head.weight"])
    # metrics of the resumed run continue where the cut run stopped, identical to the full run's
    ma, mb = read_metrics(full), read_metrics(tmp_path / "cut")
    assert [r["step"] for r in mb] == list(range(1, 11))
    assert [r["reward"] for r in ma] == [r["reward"] for r in mb]


def test_fresh_run_refuses_existing_dir_and_resume_needs_one(grpo_settings, tmp_path):
    from mvp_core.errors import UserError
    (tmp_path / "run").mkdir()
    (tmp_path / "run" / "config.yaml").write_text("max_steps: 1\n")
    with pytest.raises(UserError, match="already holds a run"):
        train(load_config(None, grpo_settings()))
    with pytest.raises(UserError, match="no run to resume"):
        train(load_config(None, grpo_settings(tmp_path / "other")), resume=True)


def test_bad_puzzles_file_is_one_line_error(grpo_settings, tmp_path):
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"id": "x"}\n')
    r = subprocess.run([PYTHON, "-m", "app.cli", "train", *grpo_settings(puzzles=bad)], cwd=ROOT,
                       env=mvp_env(), capture_output=True, text=True, timeout=120)
    assert r.returncode == 2
    assert r.stderr.strip().splitlines()[-1].startswith("error: ") and "lacks" in r.stderr
    assert "Traceback" not in r.stderr


@pytest.mark.slow
def test_cli_sigterm_saves_and_exits_cleanly(grpo_settings, tmp_path, capsys):
    """`mvp train` as its own process (as the training page runs it): SIGTERM mid-run -> exit 0,
    a checkpoint at the step it stopped at, status 'stopped'; --resume finishes the run."""
    args = grpo_settings(max_steps=1000, save_steps=10000)   # far more than a fast machine runs before the signal
    proc = subprocess.Popen([PYTHON, "-m", "app.cli", "train", *args], cwd=ROOT, env=mvp_env(),
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    run = tmp_path / "run"
    deadline = time.time() + 240
    while not read_metrics(run) and time.time() < deadline and proc.poll() is None:
        time.sleep(0.2)
    assert read_metrics(run), proc.communicate()[0][-3000:]
    proc.send_signal(signal.SIGTERM)
    out, _ = proc.communicate(timeout=120)
    assert proc.returncode == 0, out[-3000:]
    st = read_status(run)
    assert st["state"] == "stopped" and 1 <= st["step"] < 1000
    assert (run / "checkpoints" / f"step_{st['step']:06d}" / "trainer_state.json").is_file()
    assert "stopped by signal" in out
    # `mvp train --resume` finishes the rest (one more step). The CLI's own main() in this process:
    # a second interpreter would only add torch's import time to what the lines above proved.
    from app.cli import main
    assert main(["train", *grpo_settings(max_steps=st["step"] + 1, save_steps=10000), "--resume"]) == 0
    ckpt = run / "checkpoints" / f"step_{st['step']:06d}"
    assert f"resuming from {ckpt} (step {st['step']})" in capsys.readouterr().out
    assert read_status(run)["state"] == "finished"
    assert [m["step"] for m in read_metrics(run)] == list(range(1, st["step"] + 2))



def test_resume_with_more_steps_follows_the_new_schedule(grpo_settings, tmp_path):
    """1 step of a 1-step linear schedule, then --resume with max_steps=2: step 2 runs at the new
    schedule's lr (learning_rate x 1/2), not the old schedule's end value 0, and moves the weights."""
    from mvp_core.train.model_setup import lr_factor
    small = dict(save_total_limit=0, max_completion_length=4, save_steps=1)
    run = tmp_path / "run"
    assert train(load_config(None, grpo_settings(max_steps=1, **small)))["step"] == 1
    cfg2 = load_config(None, grpo_settings(max_steps=2, **small))
    second = train(cfg2, resume=True)
    assert second["state"] == "finished" and second["step"] == 2
    m = read_metrics(run)
    assert [r["step"] for r in m] == [1, 2]
    assert m[0]["lr"] == pytest.approx(1e-3)                        # step 1: first step of any linear schedule
    assert m[1]["lr"] == pytest.approx(1e-3 * lr_factor(1, cfg2)) == pytest.approx(5e-4)
    w1, w2 = _weights(run, 1), _weights(run, 2)
    assert any(not torch.equal(w1[k], w2[k]) for k in w1), "step 2 did not change the weights"


def test_a_step_runs_its_prompts_once_for_the_rollout_and_the_loss(grpo_settings, tiny_model_dir, tmp_path):
    """Where the loss takes the whole step in one micro-batch, the rollout decodes from the loss's own prompt
    forward (loop.one_prompt_pass): the vision tower, trained here, runs once a step. Cut into two
    micro-batches, the rollout prefills on its own and each micro-batch runs its prompts: three times."""
    from mvp_core.model.policy import load_policy
    from mvp_core.train.model_setup import find_visual
    for accum, per_step in ((1, 1), (2, 3)):
        model, processor = load_policy(tiny_model_dir, dtype="float32")
        calls = []
        find_visual(model).register_forward_hook(lambda *a: calls.append(1))
        cfg = load_config(None, grpo_settings(tmp_path / f"accum{accum}", gradient_accumulation_steps=accum,
                                              freeze_vision="false", beta=0.0, max_steps=2, save_steps=2))
        summary = train(cfg, policy=(model, processor))
        assert summary["step"] == 2 and len(calls) == 2 * per_step, (accum, len(calls))
        assert all(m["grad_norm"] is not None for m in read_metrics(summary["run_dir"]))

"""bench/learning_proof.py end to end at the smallest size, from the shipped warm start
(`--sft-from assets/clock-sft`): generated videos split by video, synthesis, a 2-step GRPO run, the
evaluations, and REPORT.json in the layout the learning-proof issue fixes (systems with means and
95% intervals: chance, the audit's solvers, the models; GRPO minus SFT; n_test) plus the PNG."""
from __future__ import annotations

import json
import subprocess
import sys

import pytest
from fixtures_grpo import ROOT, mvp_env

from mvp_core.synth.audit import SOLVERS


@pytest.mark.slow
def test_proof_from_a_warm_start_writes_the_report(tmp_path):
    out = tmp_path / "REPORT.json"
    cmd = [sys.executable, "bench/learning_proof.py", "--in-process", "--sft-from", str(ROOT / "assets/clock-sft"),
           "--work", str(tmp_path / "w"), "--out", str(out), "--n-videos", "8", "--test-share", "0.5",
           "--per-video", "2", "--grpo-config", "configs/proof-grpo.yaml", "--grpo-steps", "2",
           "--eval-limit", "0", "--systems", "sft,grpo", "--seed", "3"]
    r = subprocess.run(cmd, cwd=ROOT, env=mvp_env(), capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    rep = json.loads(out.read_text())
    assert set(rep["systems"]) == {"chance", *SOLVERS, "sft", "grpo"}
    for s in rep["systems"].values():
        assert 0 <= s["exact_ci"][0] <= s["exact"] <= s["exact_ci"][1] <= 1
        assert 0 <= s["reward_ci"][0] <= s["reward"] <= s["reward_ci"][1] <= 1
    d = rep["grpo_minus_sft"]
    assert d["reward_ci"][0] <= d["reward"] <= d["reward_ci"][1] and d["exact_ci"][0] <= d["exact"] <= d["exact_ci"][1]
    assert rep["n_test"] > 0 and rep["n_test_videos"] == 4 and rep["n_train_videos"] == 4
    assert (tmp_path / "w" / "grpo" / "checkpoints").is_dir() and not (tmp_path / "w" / "sft").exists()
    assert rep["plot"] and (tmp_path / "w" / "learning_curves.png").stat().st_size > 1000
    assert "grpo - sft" in r.stdout

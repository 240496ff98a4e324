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
    # --recipe grpo-large brings --in-process, --sft-from assets/clock-sft and --eval-limit 0; the rest
    # is cut to the smallest size (flags given win over the recipe's)
    cmd = [sys.executable, "bench/learning_proof.py", "--recipe", "grpo-large",
           "--work", str(tmp_path / "w"), "--out", str(out), "--n-videos", "8", "--test-share=0.5",
           "--per-video", "2", "--grpo-config", "configs/proof-grpo.yaml", "--grpo-steps", "2",
           "--systems", "sft,grpo", "--seed", "3"]
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


def test_recipe_flags_and_what_the_command_line_overrides():
    sys.path.insert(0, str(ROOT))
    from bench.learning_proof import RECIPES, parse_args
    chain = parse_args([])
    assert chain.recipe == "chain" and chain.sft_from is None and chain.n_videos == 1200 and not chain.in_process
    assert chain.test_share == 0.6 and chain.procs == 2
    assert chain.grpo_config.endswith("proof-grpo-large.yaml") and chain.grpo_set == ["eval_steps=25"]
    # a list setting adds to the recipe's (the command line's last, so it wins)
    assert parse_args(["--grpo-set", "eval_steps=0"]).grpo_set == ["eval_steps=25", "eval_steps=0"]
    large = parse_args(["--recipe", "grpo-large"])
    for key, value in RECIPES["grpo-large"].items():
        assert getattr(large, key) == value
    mine = parse_args(["--recipe", "grpo-large", "--n-videos", "600", "--test-share=0.2"])
    assert (mine.n_videos, mine.test_share, mine.sft_from) == (600, 0.2, large.sft_from)
    # argparse's abbreviations count as given too
    short = parse_args(["--recipe", "grpo-large", "--sft-f", "MINE", "--n-vid", "7"])
    assert (short.sft_from, short.n_videos, short.test_share) == ("MINE", 7, 0.6)
    with pytest.raises(SystemExit):
        parse_args(["--procs", "0"])


def test_the_warm_starts_own_videos_are_not_held_out(tmp_path):
    """Seed 0 generates the videos assets/clock-sft was trained on: from it, refused before any work."""
    sys.path.insert(0, str(ROOT))
    from bench.learning_proof import parse_args, split_videos
    for recipe in ("adapt", "grpo-large"):
        with pytest.raises(SystemExit, match="trained on"):
            split_videos(parse_args(["--recipe", recipe, "--seed", "0"]), tmp_path, {})
    assert not any(tmp_path.iterdir())
    assert parse_args(["--recipe", "adapt"]).seed != 0 and parse_args(["--recipe", "grpo-large"]).seed != 0


def test_trainers_split_over_ranks_with_the_configs_puzzles_per_step(tmp_path):
    """--procs 2: a trainer's accumulation (else its micro-batch) is halved so the step keeps its
    puzzles; one process when neither divides."""
    sys.path.insert(0, str(ROOT))
    from bench.learning_proof import split_over_ranks
    assert split_over_ranks(str(ROOT / "configs/proof-grpo-large.yaml"), [], 2) == (2, ["gradient_accumulation_steps=4"])
    assert split_over_ranks(str(ROOT / "configs/proof-sft.yaml"), [], 2) == (2, ["per_device_train_batch_size=8"])
    assert split_over_ranks(str(ROOT / "configs/proof-sft.yaml"), ["per_device_train_batch_size=5"], 2) == (1, [])
    assert split_over_ranks(str(ROOT / "configs/proof-grpo-large.yaml"), [], 1) == (1, [])

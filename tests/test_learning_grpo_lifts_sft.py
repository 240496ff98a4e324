"""A small learning proof on a real run: generated videos split by video, real synthesis, the
`learn` tiny preset, a short SFT warm start, then GRPO from its checkpoint; GRPO must raise the
mean reward on the held-out puzzles (videos neither run trained on) over its SFT start.

Both checkpoints answer the same held-out puzzles greedily through the trainers' own held-out
evaluator (mvp_core.grpo.heldout). The measured spread over repeated runs is in
docs/BENCHMARKS.md ("Learning proof")."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from mvp_core.grpo.rundir import RunDir, read_metrics

N_VIDEOS, N_TEST_VIDEOS = 36, 8


@pytest.fixture(scope="module")
def proof_data(tmp_path_factory):
    """(train puzzles.jsonl, test puzzles.jsonl): puzzles of disjoint sets of generated videos."""
    from app.cli.main import main
    from mvp_core.video.synthetic import make_videos
    root = tmp_path_factory.mktemp("proof")
    videos = make_videos(root / "videos", N_VIDEOS, seed=11)
    test, train = videos[:N_TEST_VIDEOS], videos[N_TEST_VIDEOS:]
    out = []
    for name, files in (("train", train), ("test", test)):
        data = root / name
        assert main(["synth", *map(str, files), "--data", str(data), "--db", f"sqlite:///{data / 'db.sqlite'}",
                     "--n", "4", "--m", "2", "--l", "2", "--per-video", "4", "--quiet"]) == 0
        out.append(data / "puzzles.jsonl")
    videos_of = [{json.loads(x)["video"]["id"] for x in f.read_text().splitlines()} for f in out]
    assert videos_of[0] and videos_of[1] and not videos_of[0] & videos_of[1]     # split by video
    return out[0], out[1], root


@pytest.mark.slow
def test_grpo_raises_heldout_reward_over_its_sft_start(proof_data, one_thread):
    from mvp_core.grpo.config import load_config
    from mvp_core.grpo.heldout import HeldOut
    from mvp_core.grpo.loop import train
    from mvp_core.grpo.sft import train_sft
    from mvp_core.grpo.sft_config import load_sft_config
    from mvp_core.model.policy import load_policy
    from mvp_core.model.tiny import build_tiny_model

    train_jsonl, test_jsonl, root = proof_data
    base = build_tiny_model(root / "base", preset="learn")
    configs = Path(__file__).resolve().parent.parent / "configs"
    sft_cfg = load_sft_config(configs / "proof-sft.yaml", [
        f"model={base}", f"puzzles={train_jsonl}", f"output_dir={root / 'sft'}", "max_steps=30", "save_steps=30",
        "warmup_steps=0",
        f"eval_puzzles={test_jsonl}", "eval_steps=0"])
    assert train_sft(sft_cfg)["state"] == "finished"
    sft_ckpt = RunDir(root / "sft").latest_checkpoint()[1]
    grpo_cfg = load_config(configs / "proof-grpo.yaml", [
        f"model={sft_ckpt}", f"puzzles={train_jsonl}", f"output_dir={root / 'grpo'}", "max_steps=12",
        "save_steps=12", "learning_rate=5e-4"])
    assert train(grpo_cfg)["state"] == "finished"
    grpo_ckpt = RunDir(root / "grpo").latest_checkpoint()[1]

    heldout = HeldOut.from_config(sft_cfg)
    scores = {}
    for name, ckpt in (("sft", sft_ckpt), ("grpo", grpo_ckpt)):
        model, processor = load_policy(ckpt)
        scores[name] = heldout.evaluate(model, processor)
    # the SFT run logged the same held-out numbers for its last checkpoint
    assert read_metrics(root / "sft")[-1]["eval_reward"] == pytest.approx(scores["sft"]["eval_reward"])
    assert scores["sft"]["eval_n"] == scores["grpo"]["eval_n"] >= 24
    print(f"held-out reward sft {scores['sft']['eval_reward']:.3f} -> grpo {scores['grpo']['eval_reward']:.3f}")
    assert scores["grpo"]["eval_reward"] > scores["sft"]["eval_reward"] + 0.05, scores

"""The honest learning test: the tiny random Qwen2.5-VL, a reward a random policy sometimes
earns (the completion names one of the pool's labels), and the mean reward rises clearly within
a few dozen GRPO steps. Puzzles are cut down (one masked frame, two options) to keep it fast."""
from __future__ import annotations

import copy
import json

import pytest

from mvp_core.train.config import load_config
from mvp_core.train.loop import train
from mvp_core.train.rundir import read_metrics


def _small(rec: dict) -> dict:
    """One context frame either side of one masked frame; the target and one distractor."""
    r = copy.deepcopy(rec)
    s = r["mask"]["start"]
    target = r["frames"][s]
    r["frames"] = r["frames"][s - 1:s + 2]
    r["mask"] = {"start": 1, "length": 1}
    t = next(o for o in r["options"] if o["uri"] == target["uri"])
    d = next(o for o in r["options"] if o["kind"] != "target")
    r["options"] = [dict(t, label="A"), dict(d, label="B")]
    r["answer"] = ["A"]
    return r


@pytest.mark.slow
def test_mean_reward_rises(tiny_model_dir, model_data, tmp_path, one_thread):
    data, recs = model_data
    puzzles = tmp_path / "puzzles.jsonl"
    puzzles.write_text("".join(json.dumps(_small(r)) + "\n" for r in recs))
    cfg = load_config(None, [
        f"model={tiny_model_dir}", f"puzzles={puzzles}", f"data_dir={data}", f"output_dir={tmp_path / 'run'}",
        "num_generations=8", "per_device_train_batch_size=16", "gradient_accumulation_steps=1",
        "max_completion_length=8", "max_pixels=3136", "reward=mentions_label", "learning_rate=1e-2",
        "lr_scheduler_type=constant", "max_steps=16", "save_steps=1000", "save_completions=false", "seed=0"])
    assert train(cfg)["state"] == "finished"
    r = [m["reward"] for m in read_metrics(tmp_path / "run")]
    first, last = sum(r[:4]) / 4, sum(r[-4:]) / 4
    assert first < 0.35, r                 # the random policy rarely earns it ...
    assert last > first + 0.4, r           # ... and GRPO makes it (nearly) always earn it

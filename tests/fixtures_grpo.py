"""Fixtures for the GRPO trainer tests: settings for short runs of the tiny Qwen2.5-VL
on puzzles over real frames (`model_data` and `tiny_model_dir` come from fixtures_model)."""
from __future__ import annotations

import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def tiny_overrides(model_dir: Path, data: Path, out: Path, **extra) -> list[str]:
    """key=value settings for a fast CPU run: 2 puzzles x G=4 per step, 4 visual tokens per image,
    short completions, a reward a random policy earns."""
    base = {
        "model": str(model_dir), "puzzles": str(data / "puzzles.jsonl"), "output_dir": str(out),
        "num_generations": 4, "per_device_train_batch_size": 4, "gradient_accumulation_steps": 2,
        "max_completion_length": 8, "max_pixels": 3136, "learning_rate": "1e-3",
        "lr_scheduler_type": "linear", "reward": "mentions_label", "max_steps": 4, "save_steps": 2,
        "seed": 0,
    }
    base.update(extra)
    return [f"{k}={v}" for k, v in base.items()]


from testkit.cli import mvp_env  # noqa: E402,F401  (the one CLI environment, shared with bench/)


@pytest.fixture
def grpo_settings(tiny_model_dir, model_data, tmp_path):
    """A function(**extra) -> override list for a tiny run writing into tmp_path/run."""
    data, _ = model_data

    def make(out: Path | None = None, **extra):
        return tiny_overrides(tiny_model_dir, data, out or tmp_path / "run", **extra)
    return make


PYTHON = sys.executable


@pytest.fixture
def one_thread():
    """Run torch on one thread for the test: on the shared 2-core machine two OpenMP threads
    spin against other processes and a tiny step gets 4x slower. Restored afterwards."""
    import torch
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)

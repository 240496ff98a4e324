"""Resuming never unpickles code (mvp_core/train/checkpoint.py): the optimizer, scheduler and RNG files are
loaded with weights_only=True; a crafted file that would run a command is refused with one line and runs
nothing, while the trainer's own files still load."""
from __future__ import annotations

import os
import random

import numpy as np
import pytest
import torch

from mvp_core.errors import UserError
from mvp_core.train.checkpoint import load_optimizer_state, load_rng, rng_state


class _Boom:
    def __init__(self, marker: str):
        self.marker = marker

    def __reduce__(self):
        return (os.system, (f"touch {self.marker}",))


def _model_and_optim():
    model = torch.nn.Linear(4, 2)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    model(torch.randn(3, 4)).sum().backward()
    opt.step()
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: 1.0 - s / 10)
    return model, opt, sched


def test_own_files_round_trip(tmp_path):
    _, opt, sched = _model_and_optim()
    torch.save(opt.state_dict(), tmp_path / "optimizer.pt")
    torch.save(sched.state_dict(), tmp_path / "scheduler.pt")
    random.seed(3); np.random.seed(3); torch.manual_seed(3)
    torch.save(rng_state(), tmp_path / "rng_rank0.pt")
    expected = (random.random(), float(np.random.rand()), float(torch.rand(1)))
    _, opt2, sched2 = _model_and_optim()
    load_optimizer_state(tmp_path, opt2, sched2)
    assert opt2.state_dict()["state"][0]["step"] == opt.state_dict()["state"][0]["step"]
    assert load_rng(tmp_path, 0)
    assert (random.random(), float(np.random.rand()), float(torch.rand(1))) == expected


@pytest.mark.parametrize("victim", ["rng_rank0.pt", "optimizer.pt", "scheduler.pt"])
def test_a_crafted_pickle_is_refused_and_runs_nothing(tmp_path, victim):
    _, opt, sched = _model_and_optim()
    torch.save(opt.state_dict(), tmp_path / "optimizer.pt")
    torch.save(sched.state_dict(), tmp_path / "scheduler.pt")
    torch.save(rng_state(), tmp_path / "rng_rank0.pt")
    marker = tmp_path / "pwned"
    torch.save({"torch": _Boom(str(marker))}, tmp_path / victim)
    with pytest.raises(UserError) as e:
        if victim == "rng_rank0.pt":
            load_rng(tmp_path, 0)
        else:
            load_optimizer_state(tmp_path, opt, sched)
    assert "refusing to load it" in str(e.value) or "cannot restore" in str(e.value)
    assert "\n" not in str(e.value)
    assert not marker.exists(), "the crafted file ran its command"

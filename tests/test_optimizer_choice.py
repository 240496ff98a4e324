"""The trainers' AdamW (mvp_core/train/model_setup.py make_optimizer): torch's fused kernel on plain CPU
parameters, as TRL's default ("adamw_torch_fused"), and a checkpoint saved by the other implementation
resumes on the implementation it was saved with, step for step bit-equal."""
from __future__ import annotations

import copy

import torch

from mvp_core.train.config import GRPOConfig
from mvp_core.train.model_setup import fused_applies, make_optimizer


def _model(seed: int = 0) -> torch.nn.Module:
    torch.manual_seed(seed)
    m = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.Tanh(), torch.nn.Linear(16, 4))
    m[0].bias.requires_grad_(False)          # a frozen parameter is left out, as the frozen vision tower
    return m


def _step(model, opt) -> None:
    torch.manual_seed(1)
    x = torch.randn(5, 8)
    model(x).pow(2).mean().backward()
    opt.step()
    opt.zero_grad(set_to_none=True)


def test_fused_on_cpu_and_the_same_update_as_the_loop():
    model, cfg = _model(), GRPOConfig(learning_rate=1e-2, weight_decay=0.1)
    opt, _ = make_optimizer(model, cfg)
    assert opt.param_groups[0]["fused"] is True
    assert len(opt.param_groups[0]["params"]) == 3
    ref = _model()
    ref_opt = torch.optim.AdamW([p for p in ref.parameters() if p.requires_grad], lr=1e-2, weight_decay=0.1)
    for _ in range(3):
        _step(model, opt)
        _step(ref, ref_opt)
    for a, b in zip(model.parameters(), ref.parameters()):
        torch.testing.assert_close(a, b, rtol=1e-5, atol=1e-6)      # the same AdamW, rounding aside


def test_a_checkpoint_of_the_loop_resumes_on_the_loop_bit_equal():
    cfg = GRPOConfig(learning_rate=1e-2)
    old = _model()
    old_opt = torch.optim.AdamW([p for p in old.parameters() if p.requires_grad], lr=1e-2)   # an older run's
    _step(old, old_opt)
    saved_model, saved_opt = copy.deepcopy(old.state_dict()), copy.deepcopy(old_opt.state_dict())   # a checkpoint
    _step(old, old_opt)                                 # the run as it went on

    resumed = _model(seed=5)
    resumed.load_state_dict(saved_model)
    opt, _ = make_optimizer(resumed, cfg)
    opt.load_state_dict(saved_opt)
    assert not opt.param_groups[0]["fused"]
    _step(resumed, opt)
    for a, b in zip(resumed.parameters(), old.parameters()):
        assert torch.equal(a, b)


def test_sharded_or_other_device_parameters_keep_the_default():
    assert not fused_applies([])
    assert not fused_applies([torch.nn.Parameter(torch.zeros(2, device="meta"))])
    assert not fused_applies([torch.nn.Parameter(torch.zeros(2, dtype=torch.int64), requires_grad=False)])
    assert fused_applies([torch.nn.Parameter(torch.zeros(2))])

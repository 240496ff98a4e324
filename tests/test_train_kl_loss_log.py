"""One GRPO step's KL, logged loss and grad norm under every split of the per-device batch into
reference log-prob forwards (`logprob_batch_size`) and every loss type.

Defects these tests pinned (each failed before its fix):
- beta > 0 with logprob_batch_size < per_device_train_batch_size: a log-prob sub-batch narrower than
  its micro-batch left the reference at 0 on padding, exp(0 - a very negative log-prob) overflowed
  and 0 * inf = NaN made the KL, the loss and every gradient NaN; the grad norm was then logged -1.
- loss_type=dapo: the logged loss was the optimised one divided by the number of micro-batches."""
from __future__ import annotations

import copy
import math

import pytest
import torch

from mvp_core.train import distributed as D
from mvp_core.train.config import load_config
from mvp_core.train.data import PuzzleSet
from mvp_core.train.loop import Rollout, StepContext, completion_logps, policy_gradient
from mvp_core.train.loss import k3_kl
from mvp_core.train.model_setup import end_ids, optimizer_step, make_optimizer
from mvp_core.train.runlog import logged_norm
from fixtures_grpo import tiny_overrides

B, G = 4, 4          # one puzzle, its 4 completions; micro-batches of 2 (two chunks)


@pytest.fixture(autouse=True)
def _threads(torch_one_thread):
    yield


def _context(tiny_policy, tiny_model_dir, model_data, tmp_path, **extra):
    data_dir, _ = model_data
    # temperature 1e-3 (the smallest allowed) makes the log-prob of a padding token ~ -1000: the
    # filler 0 of a narrower reference sub-batch then overflows exp() unless padding is masked out
    cfg = load_config(None, tiny_overrides(tiny_model_dir, data_dir, tmp_path / "run", num_generations=G,
                                           per_device_train_batch_size=2, gradient_accumulation_steps=2,
                                           temperature="0.001", beta=0.04, **extra))
    model, processor = copy.deepcopy(tiny_policy[0]), tiny_policy[1]
    ref = copy.deepcopy(tiny_policy[0]).eval()
    with torch.no_grad():                      # a reference that differs from the policy: KL > 0
        for p in ref.parameters():
            p.add_(0.05 * torch.randn(p.shape, generator=torch.Generator().manual_seed(p.numel())))
    end = end_ids(model, processor)
    eos_ids, pad_id = end.stop, end.pad
    ctx = StepContext(cfg, D.DistInfo(), model, model, ref, processor, eos_ids, pad_id, False)
    data = PuzzleSet.open(cfg)
    enc = data.encode(data.puzzles_for_step(0, 0, 1)[0], processor)
    eos = min(eos_ids)
    # completions of different lengths (two end early on eos): padding inside every micro-batch
    comps = [torch.tensor([11, 12, 13, eos]), torch.tensor([21, 22, 23, 24, 25, 26, 27, 28]),
             torch.tensor([31, eos]), torch.tensor([41, 42, 43, 44, 45, 46])]
    return ctx, Rollout([enc] * B, comps), torch.tensor([1.0, -0.5, 0.25, -0.75])


def _expected_loss(ctx, roll, adv) -> tuple[float, float]:
    """(the loss the step optimises, masked mean KL) by the formulas of loss.py's docstring, from one
    forward of the whole batch: at ratio 1 every token's loss is -A + beta * k3."""
    cfg = ctx.cfg
    with torch.no_grad():
        lp, _, mask = completion_logps(ctx, ctx.model, roll.seq_encs, roll.completions)
        ref, _, _ = completion_logps(ctx, ctx.ref, roll.seq_encs, roll.completions)
    m = mask.double()
    kl = k3_kl(lp.double(), ref.double()) * m
    tok = (-adv.double().unsqueeze(1) + cfg.beta * kl) * m
    chunks = [slice(0, 2), slice(2, 4)]
    per = {"grpo": lambda c: (tok[c].sum(1) / m[c].sum(1)).mean(),
           "bnpo": lambda c: tok[c].sum() / m[c].sum(),
           "dr_grpo": lambda c: tok[c].sum() / (tok[c].shape[0] * cfg.max_completion_length)}
    if cfg.loss_type == "dapo":
        loss = tok.sum() / m.sum()
    else:
        loss = sum(per[cfg.loss_type](c) for c in chunks) / len(chunks)
    return float(loss), float(kl.sum() / m.sum())


@pytest.mark.parametrize("loss_type", ["grpo", "bnpo", "dr_grpo", "dapo"])
@pytest.mark.parametrize("logprob_batch_size", [1, 2, 3])
def test_kl_finite_and_logged_loss_is_the_optimised_one(tiny_policy, tiny_model_dir, model_data, tmp_path,
                                                        loss_type, logprob_batch_size):
    ctx, roll, adv = _context(tiny_policy, tiny_model_dir, model_data, tmp_path, loss_type=loss_type,
                              logprob_batch_size=logprob_batch_size)
    want_loss, want_kl = _expected_loss(ctx, roll, adv)
    stats, _ = policy_gradient(ctx, roll, adv)
    kl = stats["kl"] / stats["tokens"]
    assert math.isfinite(kl) and kl > 0
    assert kl == pytest.approx(want_kl, rel=1e-4)
    assert stats["loss"] == pytest.approx(want_loss, rel=1e-4, abs=1e-7)
    grads = [p.grad for p in ctx.model.parameters() if p.grad is not None]
    assert grads and all(torch.isfinite(g).all() for g in grads)
    true = float(torch.linalg.vector_norm(torch.stack([torch.linalg.vector_norm(g) for g in grads])))
    opt, sched = make_optimizer(ctx.model, ctx.cfg)
    gn = optimizer_step(ctx.model, ctx.cfg.max_grad_norm, opt, sched)      # clips the grads in place
    assert logged_norm(gn) == pytest.approx(true, rel=1e-5) and true > 0


def test_a_non_finite_grad_norm_is_logged_as_null_not_a_number():
    assert logged_norm(float("nan")) is None and logged_norm(float("inf")) is None
    assert logged_norm(0.0) == 0.0 and logged_norm(2.5) == 2.5

"""GRPO maths against hand-computed numbers: advantages per scale_rewards, the clipped surrogate
and its gradient per loss_type, the k3 KL, and accumulation equivalence."""
from __future__ import annotations

import math

import pytest
import torch

from mvp_core.train.loss import group_advantages, grpo_loss, k3_kl, nanstd

# Two completions of up to 3 tokens; the first has 2 real tokens. old log-probs 0, so the
# probability ratio of each token is exp(logp) = R.
R = torch.tensor([[1.1, 1.3, 0.9], [0.7, 1.0, 0.85]], dtype=torch.float64)
MASK = torch.tensor([[1, 1, 0], [1, 1, 1]], dtype=torch.float64)
ADV = torch.tensor([1.0, -0.5], dtype=torch.float64)
# Per-token loss -min(r A, clip(r, 0.8, 1.2) A), by hand:
#   seq 0 (A=1):    r=1.1 -> -1.1 ;  r=1.3 -> clipped at 1.2 -> -1.2 ; (masked)
#   seq 1 (A=-0.5): r=0.7 -> clip 0.8 gives the min -0.4 -> 0.4 ; r=1.0 -> 0.5 ; r=0.85 -> 0.425
# d(per-token)/d(logp) = -A r where the unclipped branch is active, 0 where the clip is:
#   seq 0: [-1.1, 0, 0]      seq 1: [0, 0.5, 0.425]
RAW_GRAD = torch.tensor([[-1.1, 0.0, 0.0], [0.0, 0.5, 0.425]], dtype=torch.float64)
SUM = -1.1 - 1.2 + 0.4 + 0.5 + 0.425          # -0.975 over 5 tokens


def _run(loss_type, **kw):
    logp = torch.log(R).clone().requires_grad_(True)
    out = grpo_loss(logp, torch.zeros_like(logp), ADV, MASK, loss_type=loss_type, epsilon=0.2, **kw)
    out.loss.backward()
    return out, logp.grad


@pytest.mark.parametrize("loss_type,expected,grad_scale", [
    ("grpo", ((-1.1 - 1.2) / 2 + (0.4 + 0.5 + 0.425) / 3) / 2, torch.tensor([[1 / 4], [1 / 6]])),
    ("bnpo", SUM / 5, torch.tensor([[1 / 5], [1 / 5]])),
    ("dr_grpo", SUM / (2 * 4), torch.tensor([[1 / 8], [1 / 8]])),
    ("dapo", SUM / 5, torch.tensor([[1 / 5], [1 / 5]])),
])
def test_loss_and_gradient_by_hand(loss_type, expected, grad_scale):
    out, grad = _run(loss_type, max_completion_length=4)
    assert out.loss.item() == pytest.approx(expected, abs=1e-12)
    assert torch.allclose(grad, RAW_GRAD * grad_scale.double(), atol=1e-12)
    # one token of seq 0 is clipped high (A>0), one of seq 1 clipped low (A<0): 1/5 each
    assert out.clip_high == pytest.approx(0.2) and out.clip_low == pytest.approx(0.2)


def test_grad_accum_scaling():
    # grpo / bnpo / dr_grpo divide by the number of micro-batches; dapo by its token normaliser
    for lt in ("grpo", "bnpo", "dr_grpo"):
        one, _ = _run(lt, max_completion_length=4)
        two, _ = _run(lt, max_completion_length=4, grad_accum=2)
        assert two.loss.item() == pytest.approx(one.loss.item() / 2)
        assert two.policy_loss == pytest.approx(one.policy_loss)
    dapo, _ = _run("dapo", dapo_normalizer=10.0)
    assert dapo.loss.item() == pytest.approx(SUM / 10)


def test_dapo_micro_batches_equal_one_batch():
    """Summed over micro-batches with the step's token count as normaliser, dapo's gradient is the
    same as one big batch's: the token mean over the whole step."""
    logp = torch.log(R).clone().requires_grad_(True)
    grpo_loss(logp, torch.zeros_like(logp), ADV, MASK, loss_type="dapo").loss.backward()
    whole = logp.grad.clone()
    logp2 = torch.log(R).clone().requires_grad_(True)
    total = float(MASK.sum())
    for i in range(2):
        grpo_loss(logp2[i:i + 1], torch.zeros(1, 3, dtype=torch.float64), ADV[i:i + 1], MASK[i:i + 1],
                  loss_type="dapo", dapo_normalizer=total).loss.backward()
    assert torch.allclose(whole, logp2.grad, atol=1e-12)


def test_epsilon_high_widens_upper_clip():
    # with epsilon_high = 0.35 the r=1.3 token of seq 0 is inside the clip range (1.3 < 1.35)
    out, grad = _run("bnpo", epsilon_high=0.35)
    assert grad[0, 1].item() == pytest.approx(-1.3 / 5)
    assert out.clip_high == 0.0


def test_k3_kl_and_its_gradient():
    logp = torch.zeros(1, 1, dtype=torch.float64, requires_grad=True)
    ref = torch.full((1, 1), math.log(0.5), dtype=torch.float64)
    kl = k3_kl(logp, ref)
    assert kl.item() == pytest.approx(0.5 + math.log(2) - 1)       # e^d - d - 1, d = log 0.5
    kl.sum().backward()
    assert logp.grad.item() == pytest.approx(1 - 0.5)                # d/dlogp = 1 - e^d
    assert k3_kl(ref, ref).item() == 0.0


def test_beta_adds_kl_to_the_loss():
    logp = torch.log(R).clone()
    ref = logp - 0.1
    base = grpo_loss(logp, logp, ADV, MASK, loss_type="bnpo")
    withkl = grpo_loss(logp, logp, ADV, MASK, loss_type="bnpo", beta=0.04, ref_logps=ref)
    kl_tok = math.exp(-0.1) + 0.1 - 1
    assert withkl.kl == pytest.approx(kl_tok)
    assert withkl.loss.item() == pytest.approx(base.loss.item() + 0.04 * kl_tok)
    with pytest.raises(ValueError):
        grpo_loss(logp, logp, ADV, MASK, beta=0.04)


def test_unknown_loss_type():
    with pytest.raises(ValueError, match="unknown loss_type"):
        grpo_loss(torch.zeros(1, 1), torch.zeros(1, 1), torch.zeros(1), torch.ones(1, 1), loss_type="ppo")


REWARDS = torch.tensor([1.0, 0.0, 0.0, 0.0, 0.5, 0.5, 0.5, 0.5])


def test_group_advantages():
    a = group_advantages(REWARDS, 4, "group")
    # group 1: mean 0.25, Bessel std sqrt((0.75^2 + 3 * 0.25^2) / 3) = 0.5
    assert torch.allclose(a.advantages[:4], torch.tensor([0.75, -0.25, -0.25, -0.25]) / 0.5001, atol=1e-6)
    assert torch.all(a.advantages[4:] == 0)
    assert a.zero_std.tolist() == [False] * 4 + [True] * 4


def test_batch_and_none_scaling():
    batch = group_advantages(REWARDS, 4, "batch")
    std = float(torch.std(REWARDS))     # Bessel, over the whole batch
    assert batch.advantages[0].item() == pytest.approx(0.75 / (std + 1e-4), rel=1e-5)
    none = group_advantages(REWARDS, 4, "none")
    assert torch.allclose(none.advantages, torch.tensor([0.75, -0.25, -0.25, -0.25, 0, 0, 0, 0]))
    assert none.zero_std.tolist() == [False] * 4 + [True] * 4   # group std still reported
    with pytest.raises(ValueError):
        group_advantages(REWARDS, 4, "rank")


def test_nanstd_is_bessel_corrected():
    x = torch.tensor([1.0, 2.0, 3.0, 4.0])
    assert nanstd(x).item() == pytest.approx(float(torch.std(x)))
    assert math.isnan(nanstd(torch.tensor([1.0])).item())

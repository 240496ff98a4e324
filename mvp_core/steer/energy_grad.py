"""E(h) and dE/dh of an EnergyMLP in eval mode in one pass, without autograd.

Written by hand because steering takes K x k tiny gradient steps per forward call (docs/steer.md):
for the small energies the behavioural test and the VideoLLM use (256-128), autograd's graph and
engine cost several times the arithmetic (docs/BENCHMARKS.md, "Energy steering"). The layers are
the ones EnergyMLP builds: Linear -> LayerNorm -> SiLU -> Dropout (identity in eval mode), then
Linear -> 1. tests/test_steer_core.py checks the result against autograd."""
from __future__ import annotations

import torch
from torch import nn

from mvp_core.steer.energy import EnergyMLP


def energy_and_grad(model: EnergyMLP, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """(E(x) [B], dE/dx [B, D]) for states x [B, D]; the model must be in eval mode."""
    if model.training:
        raise ValueError("energy_and_grad needs the energy model in eval mode (dropout off)")
    mods = list(model.net)
    out = mods[-1]
    saved = []
    with torch.no_grad():
        a = x
        for lin, ln in zip(mods[0:-1:4], mods[1:-1:4]):
            lin: nn.Linear
            ln: nn.LayerNorm
            z = torch.addmm(lin.bias, a, lin.weight.t())
            zc = z - z.mean(-1, keepdim=True)
            rstd = torch.rsqrt(zc.pow(2).mean(-1, keepdim=True) + ln.eps)
            zh = zc * rstd
            y = torch.addcmul(ln.bias, zh, ln.weight)
            s = torch.sigmoid(y)
            saved.append((lin.weight, ln.weight, zh, rstd, y, s))
            a = y * s                                          # SiLU
        e = torch.addmm(out.bias, a, out.weight.t()).squeeze(-1)
        g = out.weight.expand(x.shape[0], -1)
        for w, gamma, zh, rstd, y, s in reversed(saved):
            gy = g * s * (1 + y * (1 - s))                     # SiLU'
            gzh = gy * gamma
            gz = rstd * (gzh - gzh.mean(-1, keepdim=True) - zh * (gzh * zh).mean(-1, keepdim=True))
            g = gz @ w
    return e, g

"""E(h) and dE/dh of an EnergyMLP in eval mode in one pass, without autograd.

Written by hand because steering takes K x k tiny gradient steps per forward call (docs/steer.md):
for the small energies the behavioural test and the VideoLLM use (256-128), autograd's graph and
engine cost several times the arithmetic (docs/BENCHMARKS.md, "Energy steering"). The layers are
the ones EnergyMLP builds: Linear -> LayerNorm -> SiLU -> Dropout (identity in eval mode), then
Linear -> 1. tests/test_steer_core.py checks the result against autograd."""
from __future__ import annotations

import torch

from mvp_core.steer.energy import EnergyMLP


class EnergyGrad:
    """`EnergyGrad(model)(x) -> (E(x) [B], dE/dx [B, D])`. The weights are read once, here (module
    attribute look-ups cost more than a step's arithmetic at these sizes), so build it once per
    steering call, not once per step; the model must be in eval mode and stay unchanged meanwhile."""

    def __init__(self, model: EnergyMLP):
        if model.training:
            raise ValueError("EnergyGrad needs the energy model in eval mode (dropout off)")
        mods = list(model.net)
        self.blocks = [(lin.weight.detach(), lin.weight.detach().t(), lin.bias.detach(), ln.weight.detach(),
                        ln.bias.detach(), ln.eps)
                       for lin, ln in zip(mods[0:-1:4], mods[1:-1:4])]
        self.w_out, self.b_out = mods[-1].weight.detach(), mods[-1].bias.detach()

    def __call__(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        saved = []
        with torch.no_grad():
            a = x
            for w, wt, b, gamma, beta, eps in self.blocks:
                z = torch.addmm(b, a, wt)
                y, mu, rstd = torch.native_layer_norm(z, [z.shape[-1]], gamma, beta, eps)
                s = torch.sigmoid(y)
                saved.append((w, gamma, (z - mu) * rstd, rstd, s * (1 + y * (1 - s))))   # zhat, SiLU'(y)
                a = y * s                                                                # SiLU(y)
            e = torch.addmm(self.b_out, a, self.w_out.t()).squeeze(-1)
            g = self.w_out.expand(x.shape[0], -1)
            for w, gamma, zh, rstd, dsilu in reversed(saved):
                gzh = g * dsilu * gamma
                g = (rstd * (gzh - gzh.mean(-1, keepdim=True) - zh * (gzh * zh).mean(-1, keepdim=True))) @ w
        return e, g

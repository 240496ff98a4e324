"""The energy model (one small MLP per layer) and its InfoNCE loss, as ELS publishes them."""
from __future__ import annotations

import torch
from torch import nn


class EnergyMLP(nn.Module):
    """E(h): hidden blocks Linear -> LayerNorm -> SiLU -> Dropout, then Linear -> one scalar.
    Low energy = a desirable state, high = undesirable."""

    def __init__(self, in_dim: int, hidden: list[int], dropout: float = 0.15):
        super().__init__()
        blocks, d = [], in_dim
        for h in hidden:
            blocks += [nn.Linear(d, h), nn.LayerNorm(h), nn.SiLU(), nn.Dropout(dropout)]
            d = h
        blocks.append(nn.Linear(d, 1))
        self.net = nn.Sequential(*blocks)
        self.in_dim = in_dim

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """Energies of shape [...] for states of shape [..., in_dim]."""
        return self.net(x).squeeze(-1)


def info_nce(e_good: torch.Tensor, e_bad: torch.Tensor, tau: float) -> torch.Tensor:
    """Mean over good states of CE([-E(good), -E(bad_1), ..., -E(bad_B)] / tau, target 0): every good
    state is contrasted with all bad states of its batch."""
    logits = torch.cat([e_good[:, None], e_bad[None, :].expand(len(e_good), -1)], dim=1) / -tau
    target = torch.zeros(len(e_good), dtype=torch.long, device=e_good.device)
    return nn.functional.cross_entropy(logits, target)

"""Train one energy model per layer: seeded train/val/test splits (steer/splits.py: a set's own splits,
or by group, e.g. video), InfoNCE training, best epoch by validation balanced accuracy at a threshold
calibrated on validation (steer/metrics.py: the classes are rarely of equal size), test balanced accuracy
and AUROC per layer; the bank ranks layers by validation balanced accuracy, so the test numbers stay an
unbiased report."""
from __future__ import annotations

import copy

import numpy as np
import torch

from mvp_core.errors import UserError
from mvp_core.stats.classify import auroc
from mvp_core.steer.bank import EnergyBank
from mvp_core.steer.config import EnergyConfig, SplitMetrics
from mvp_core.steer.energy import EnergyMLP, info_nce
from mvp_core.steer.metrics import accuracy, balanced_accuracy_at, calibrate
from mvp_core.steer.splits import draw_splits


def _energies(model: EnergyMLP, x: torch.Tensor) -> np.ndarray:
    model.eval()
    with torch.no_grad():
        return model(x).numpy()


def _epoch(model, opt, x, bad, idx, cfg: EnergyConfig, rng) -> float:
    model.train()
    losses = []
    for s in range(0, len(idx), cfg.batch_size):
        b = idx[s:s + cfg.batch_size]
        gb, bb = b[~bad[b]], b[bad[b]]
        if len(gb) == 0 or len(bb) == 0:   # InfoNCE needs both kinds in a batch
            continue
        loss = info_nce(model(x[gb]), model(x[bb]), cfg.tau)
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(float(loss.detach()))
    return float(np.mean(losses)) if losses else float("nan")


def train_layer(x: torch.Tensor, bad: np.ndarray, splits, cfg: EnergyConfig, layer: int) -> tuple[EnergyMLP, SplitMetrics]:
    """One layer's energy model and its metrics. `x`: [n, hidden] fp32 states of that layer."""
    tr, va, te = splits
    torch.manual_seed(cfg.seed + layer)
    rng = np.random.default_rng(cfg.seed + layer)
    model = EnergyMLP(x.shape[1], cfg.hidden, cfg.dropout)
    opt = torch.optim.Adam(model.parameters(), lr=cfg.lr)
    best = (-1.0, -1, None)
    for epoch in range(cfg.epochs):
        _epoch(model, opt, x, bad, tr[rng.permutation(len(tr))], cfg, rng)
        _, acc = calibrate(_energies(model, x[va]), bad[va])
        if acc > best[0]:
            best = (acc, epoch, copy.deepcopy(model.state_dict()))
    model.load_state_dict(best[2])
    model.eval()
    e_va, e_te = _energies(model, x[va]), _energies(model, x[te])
    thr, val_bal = calibrate(e_va, bad[va])
    m = SplitMetrics(layer=layer, best_epoch=best[1], threshold=thr, val_bal_acc=val_bal,
                     val_auroc=auroc(e_va, bad[va]), test_bal_acc=balanced_accuracy_at(e_te, bad[te], thr),
                     test_auroc=auroc(e_te, bad[te]), val_acc=accuracy(e_va, bad[va], thr),
                     test_acc=accuracy(e_te, bad[te], thr), val_acc_e0=accuracy(e_va, bad[va], 0.0),
                     n_train=len(tr), n_val=len(va), n_test=len(te))
    return model, m


def train_bank(states: torch.Tensor, bad, cfg: EnergyConfig | None = None, layers: list[int] | None = None,
               groups: list | None = None, model_name: str = "", progress: bool = False,
               split_names: list[str] | None = None, fingerprint: dict | None = None) -> EnergyBank:
    """Energy models for `layers` (default all) from states [n, n_layers, hidden] and labels (True = bad).
    `groups` / `split_names`: per-row group and set split (`draw_splits`). `fingerprint`: the
    states' model (steer/fingerprint.py), so the bank steers only that model."""
    from tqdm import tqdm
    cfg = cfg or EnergyConfig()
    bad = np.asarray(bad, dtype=bool)
    if states.ndim != 3 or states.shape[0] != len(bad):
        raise UserError(f"states {tuple(states.shape)} do not match {len(bad)} labels")
    layers = list(range(states.shape[1])) if layers is None else layers
    splits = draw_splits(bad, cfg, groups, split_names)
    models, metrics = {}, {}
    for li in tqdm(layers, desc="energy", unit="layer", disable=not progress):
        models[li], metrics[li] = train_layer(states[:, li, :].float(), bad, splits, cfg, li)
    return EnergyBank(models=models, metrics=metrics, model_name=model_name, hidden_size=int(states.shape[2]),
                      num_layers=int(states.shape[1]), energy_config=cfg, fingerprint=fingerprint)

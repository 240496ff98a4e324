"""Which labelled states a bank trains, validates and tests on (docs/steer.md): a curated set's own
splits, else drawn by group (a video never in two splits), else stratified by label. Apart from the
training (steer/train.py) because the Rollouts page counts a launch's splits before it starts, and the
server must not import torch for that (docs/web.md, "Speed and memory")."""
from __future__ import annotations

import numpy as np

from mvp_core.errors import UserError
from mvp_core.steer.config import EnergyConfig


def split_indices(bad: np.ndarray, val_frac: float, test_frac: float, seed: int,
                  groups: list | None = None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(train, val, test) indices. Without groups: stratified by label. With groups (e.g. a video id
    or a prompt template), every group lands in one split only."""
    rng = np.random.default_rng(seed)
    bad = np.asarray(bad, dtype=bool)
    parts: list[list[int]] = [[], [], []]
    if groups is None:
        for cls in (False, True):
            idx = rng.permutation(np.flatnonzero(bad == cls))
            n_test, n_val = round(len(idx) * test_frac), round(len(idx) * val_frac)
            parts[2] += idx[:n_test].tolist()
            parts[1] += idx[n_test:n_test + n_val].tolist()
            parts[0] += idx[n_test + n_val:].tolist()
    else:
        # stratified by group: groups mostly bad and groups mostly good are shared out separately, so a
        # split gets both kinds whenever each kind has enough groups (a video is often all one kind)
        share: dict = {}
        for g, b in zip(groups, bad):
            share.setdefault(g, []).append(bool(b))
        where = {}
        for cls in (False, True):
            keys = sorted((g for g, v in share.items() if (np.mean(v) >= 0.5) == cls), key=str)
            keys = [keys[i] for i in rng.permutation(len(keys))]
            n_test, n_val = round(len(keys) * test_frac), round(len(keys) * val_frac)
            if len(keys) >= 3:          # one group each at least, and one left to train on
                n_test, n_val = max(n_test, 1), max(n_val, 1)
            where.update({k: 2 if i < n_test else 1 if i < n_test + n_val else 0 for i, k in enumerate(keys)})
        for i, g in enumerate(groups):
            parts[where[g]].append(i)
    out = tuple(np.array(sorted(p), dtype=np.int64) for p in parts)
    for name, p in zip(("train", "validation", "test"), out):
        if len(p) == 0 or bad[p].all() or not bad[p].any():
            raise UserError(f"the {name} split needs good and bad states ({int(bad.sum())} bad of {len(bad)}"
                            + (f" from {len(set(groups))} videos" if groups is not None else "")
                            + "; a bank needs more labelled puzzles of each kind)")
    return out


def draw_splits(bad, cfg: EnergyConfig, groups: list | None = None, split_names: list[str] | None = None):
    """The (train, val, test) indices a bank trains on: a curated set's own splits when the rows span
    more than one, else drawn by group (a video: no video in two splits) when there is more than one,
    else stratified by label. One line when a split would lack good or bad states."""
    bad = np.asarray(bad, dtype=bool)
    if split_names is not None and len(set(split_names)) > 1:
        return given_splits(split_names, bad)
    groups = list(groups) if groups is not None and len(set(groups)) > 1 else None
    return split_indices(bad, cfg.val_frac, cfg.test_frac, cfg.seed, groups)


def given_splits(names: list[str], bad: np.ndarray):
    """(train, val, test) indices from per-row split names (a curated set's own split, by video)."""
    names = list(names)
    out = tuple(np.array([i for i, n in enumerate(names) if n == want], dtype=np.int64)
                for want in ("train", "val", "test"))
    for name, p in zip(("train", "val", "test"), out):
        if len(p) == 0 or bad[p].all() or not bad[p].any():
            raise UserError(f"the {name} split needs good and bad states ({int(bad[p].sum())} bad of {len(p)}; "
                            "a bank needs more labelled puzzles of each kind)")
    return out

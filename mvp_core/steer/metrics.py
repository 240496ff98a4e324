"""Accuracy at a calibrated energy threshold, and AUROC.

Hand-written (a few lines) because the stack has no scikit-learn; AUROC is the Mann-Whitney U
statistic with average ranks for ties, which equals the area under the ROC curve."""
from __future__ import annotations

import numpy as np


def auroc(energy: np.ndarray, bad: np.ndarray) -> float:
    """P(E(bad) > E(good)), ties counted half. 0.5 when a class is empty."""
    energy, bad = np.asarray(energy, dtype=np.float64), np.asarray(bad, dtype=bool)
    n_bad, n_good = int(bad.sum()), int((~bad).sum())
    if n_bad == 0 or n_good == 0:
        return 0.5
    order = np.argsort(energy, kind="mergesort")
    ranks = np.empty(len(energy))
    sorted_e = energy[order]
    # average ranks over runs of equal energies
    i = 0
    while i < len(sorted_e):
        j = i
        while j + 1 < len(sorted_e) and sorted_e[j + 1] == sorted_e[i]:
            j += 1
        ranks[order[i:j + 1]] = (i + j) / 2 + 1
        i = j + 1
    u = ranks[bad].sum() - n_bad * (n_bad + 1) / 2
    return float(u / (n_bad * n_good))


def accuracy(energy: np.ndarray, bad: np.ndarray, threshold: float) -> float:
    """Share of states on the right side: bad iff E > threshold."""
    if len(energy) == 0:
        return 0.0
    return float(np.mean((np.asarray(energy) > threshold) == np.asarray(bad, dtype=bool)))


def calibrate(energy: np.ndarray, bad: np.ndarray) -> tuple[float, float]:
    """(threshold, accuracy): the cut between sorted energies that maximises accuracy. InfoNCE only
    fixes energy differences, so E = 0 is not a meaningful boundary; this cut is."""
    e = np.asarray(energy, dtype=np.float64)
    if len(e) == 0:
        return 0.0, 0.0
    order = np.argsort(e, kind="mergesort")
    se, sb = e[order], np.asarray(bad, dtype=bool)[order]
    # cut before position i: rows < i called good, rows >= i called bad
    good_below = np.concatenate([[0], np.cumsum(~sb)])
    bad_above = np.concatenate([[0], np.cumsum(sb[::-1])])[::-1]
    correct = good_below + bad_above
    valid = np.ones(len(e) + 1, dtype=bool)
    valid[1:-1] = se[1:] > se[:-1]          # only cut between distinct energies
    correct = np.where(valid, correct, -1)
    i = int(np.argmax(correct))
    if i == 0:
        thr = se[0] - 1.0
    elif i == len(e):
        thr = se[-1] + 1.0
    else:
        thr = (se[i - 1] + se[i]) / 2
    return float(thr), float(correct[i] / len(e))

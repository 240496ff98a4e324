"""An energy threshold calibrated for balanced accuracy, and the scores at it.

The classes of steering data are rarely the same size (few false refusals, few right answers), so
plain accuracy rewards calling every state the larger class: a layer that separates nothing would
rank first. The threshold, the best epoch and the layer ranking therefore use balanced accuracy
(mvp_core/stats/classify.py, with AUROC); plain accuracy is reported beside it."""
from __future__ import annotations

import numpy as np

from mvp_core.stats.classify import balanced_accuracy


def accuracy(energy: np.ndarray, bad: np.ndarray, threshold: float) -> float:
    """Share of states on the right side: bad iff E > threshold."""
    if len(energy) == 0:
        return 0.0
    return float(np.mean((np.asarray(energy) > threshold) == np.asarray(bad, dtype=bool)))


def balanced_accuracy_at(energy: np.ndarray, bad: np.ndarray, threshold: float) -> float:
    """Balanced accuracy of the rule bad iff E > threshold."""
    return balanced_accuracy(np.asarray(energy) > threshold, bad)


def calibrate(energy: np.ndarray, bad: np.ndarray) -> tuple[float, float]:
    """(threshold, balanced accuracy): the cut between sorted energies that maximises balanced
    accuracy. InfoNCE only fixes energy differences, so E = 0 is not a meaningful boundary; this cut is."""
    e = np.asarray(energy, dtype=np.float64)
    if len(e) == 0:
        return 0.0, 0.0
    order = np.argsort(e, kind="mergesort")
    se, sb = e[order], np.asarray(bad, dtype=bool)[order]
    n_bad, n_good = int(sb.sum()), int((~sb).sum())
    # cut before position i: rows < i called good, rows >= i called bad
    good_below = np.concatenate([[0], np.cumsum(~sb)])
    bad_above = np.concatenate([[0], np.cumsum(sb[::-1])])[::-1]
    recalls = [r for r in (good_below / n_good if n_good else None, bad_above / n_bad if n_bad else None)
               if r is not None]
    score = np.mean(recalls, axis=0)
    valid = np.ones(len(e) + 1, dtype=bool)
    valid[1:-1] = se[1:] > se[:-1]          # only cut between distinct energies
    score = np.where(valid, score, -1.0)
    i = int(np.argmax(score))
    if i == 0:
        thr = se[0] - 1.0
    elif i == len(e):
        thr = se[-1] + 1.0
    else:
        thr = (se[i - 1] + se[i]) / 2
    return float(thr), float(score[i])

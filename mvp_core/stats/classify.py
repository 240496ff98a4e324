"""Scores of a binary classifier that do not reward predicting the larger class: AUROC and balanced
accuracy. One place for both (the stack has no scikit-learn); energy steering ranks and gates its
layers with them (docs/steer.md)."""
from __future__ import annotations

import numpy as np


def auroc(score, positive) -> float:
    """P(score of a positive > score of a negative), ties counted half: the Mann-Whitney U statistic
    from average ranks, which equals the area under the ROC curve. 0.5 when a class is empty."""
    from scipy.stats import rankdata
    score, positive = np.asarray(score, dtype=np.float64), np.asarray(positive, dtype=bool)
    n_pos, n_neg = int(positive.sum()), int((~positive).sum())
    if n_pos == 0 or n_neg == 0:
        return 0.5
    u = rankdata(score, method="average")[positive].sum() - n_pos * (n_pos + 1) / 2
    return float(u / (n_pos * n_neg))


def balanced_accuracy(predicted, positive) -> float:
    """Mean of the recall of each class present: (TPR + TNR) / 2 for two classes. A constant
    prediction scores 0.5 however unbalanced the classes are (plain accuracy would score the
    majority's share). 0.0 for no rows."""
    predicted, positive = np.asarray(predicted, dtype=bool), np.asarray(positive, dtype=bool)
    recalls = [float(np.mean(predicted[positive == c] == c)) for c in (True, False) if (positive == c).any()]
    return float(np.mean(recalls)) if recalls else 0.0

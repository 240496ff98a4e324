"""Chance-corrected agreement: Cohen's kappa (two raters) and Fleiss' kappa (any number per item).

Pure functions over category counts. Kappa is undefined (None) when chance agreement is 1, i.e. every
rating falls in one category; the observed agreement is still reported beside it."""
from __future__ import annotations

from collections import Counter
from typing import Hashable, Sequence


def cohen_kappa(a: Sequence[Hashable], b: Sequence[Hashable]) -> float | None:
    """Cohen's kappa of two raters' labels on the same items (same order)."""
    if len(a) != len(b):
        raise ValueError("both raters must label the same items")
    n = len(a)
    if n == 0:
        return None
    p_o = sum(x == y for x, y in zip(a, b)) / n
    ca, cb = Counter(a), Counter(b)
    p_e = sum(ca[c] * cb[c] for c in set(ca) | set(cb)) / (n * n)
    return None if p_e >= 1.0 else (p_o - p_e) / (1.0 - p_e)


def item_agreement(counts: dict[Hashable, int]) -> float | None:
    """Share of agreeing rater pairs on one item (Fleiss' P_i); None with fewer than two ratings."""
    n = sum(counts.values())
    if n < 2:
        return None
    return (sum(c * c for c in counts.values()) - n) / (n * (n - 1))


def fleiss_kappa(items: Sequence[dict[Hashable, int]]) -> dict:
    """Fleiss' kappa over items given as {category: number of raters}. Items may have different
    numbers of raters (the usual generalisation: P_i per item with its own n_i, category shares
    pooled over all ratings); items with fewer than two ratings are ignored."""
    items = [c for c in items if sum(c.values()) >= 2]
    if not items:
        return {"kappa": None, "observed": None, "expected": None, "n_items": 0, "n_ratings": 0}
    total = sum(sum(c.values()) for c in items)
    pooled: Counter = Counter()
    for c in items:
        pooled.update(c)
    p_bar = sum(item_agreement(c) for c in items) / len(items)
    p_e = sum((v / total) ** 2 for v in pooled.values())
    kappa = None if p_e >= 1.0 else (p_bar - p_e) / (1.0 - p_e)
    return {"kappa": kappa, "observed": p_bar, "expected": p_e, "n_items": len(items), "n_ratings": total}

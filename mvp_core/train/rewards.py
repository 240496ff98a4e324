"""The reward a run optimises, chosen by `GRPOConfig.reward`; each returns the total and its terms.

`mvp` is the fine-grained reward (docs/ARCHITECTURE.md, "Reward") (mvp_core.reward). The other two are for smoke tests and
demos with an untrained model, whose completions essentially never have the answer format:
`format` is the format term alone, `mentions_label` pays 1 when the completion names at least
one of the pool's labels as a standalone capital letter (which a random policy sometimes does)."""
from __future__ import annotations

import re

from mvp_core.reward import score_completion

TERMS = ("format", "selection", "order", "exact")


def score(kind: str, text: str, answer: list[str], pool: list[str], weights: dict | None = None) -> dict:
    """{'reward': total, 'format':..., 'selection':..., 'order':..., 'exact':..., 'labels': [...]}"""
    t = score_completion(text, answer, pool, weights)
    terms = {"format": t.format, "selection": t.selection, "order": t.order, "exact": t.exact,
             "labels": list(t.labels)}
    if kind == "mvp":
        total = t.total
    elif kind == "format":
        total = t.format
    elif kind == "mentions_label":
        total = 1.0 if _mentions_label(text, pool) else 0.0
    else:
        raise ValueError(f"unknown reward {kind!r}")
    return {"reward": float(total), **terms}


def _mentions_label(text: str, pool: list[str]) -> bool:
    found = set(re.findall(r"(?<![A-Za-z])([A-Z])(?![A-Za-z])", text))
    return bool(found & set(pool))

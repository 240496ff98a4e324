"""Warnings the Train page shows when a run has no learning signal, read from the
run's metrics log (metrics.jsonl, mvp_core/train/rundir.py): every group's answers scoring alike
(reward std 0: GRPO's advantages are all 0) or a zero gradient, for STREAK consecutive steps. A flat
reward line alone does not say which; these do."""
from __future__ import annotations

from app.web.common import esc

STREAK = 5          # consecutive steps before a run is called signal-less (a single flat step is common)
ZERO = 1e-12


def _longest(rows: list[dict], key: str) -> tuple[int, int, int]:
    """(length, first step, last step) of the longest run of consecutive logged steps with `key` 0."""
    best, cur, first = (0, 0, 0), 0, 0
    for r in rows:
        v = r.get(key)
        if isinstance(v, (int, float)) and abs(v) <= ZERO:
            if cur == 0:
                first = r.get("step", 0)
            cur += 1
            if cur > best[0]:
                best = (cur, first, r.get("step", 0))
        else:
            cur = 0
    return best


def warnings(rows: list[dict], streak: int = STREAK) -> list[tuple[str, str]]:
    """(kind, sentence) for each missing signal: "no-variance", "zero-grad"."""
    out = []
    n, a, b = _longest(rows, "reward_std")
    if n >= streak:
        out.append(("no-variance", f"No reward variance for {n} consecutive steps ({a}-{b}): every answer of each "
                                   f"group scored the same, so every advantage is 0 and GRPO learns nothing. Make "
                                   f"the puzzles easier or harder for this model, raise num_generations or the "
                                   f"temperature."))
    n, a, b = _longest(rows, "grad_norm")
    if n >= streak:
        out.append(("zero-grad", f"Zero gradient for {n} consecutive steps ({a}-{b}): the weights did not move."))
    return out


def warnings_html(rows: list[dict], streak: int = STREAK) -> str:
    ws = warnings(rows, streak)
    if not ws:
        return ""
    return "".join(f'<div class="mvp-msg mvp-msg-warn train-signal" data-signal="{k}">{esc(t)}</div>' for k, t in ws)


SHORT = {"no-variance": "no reward variance", "zero-grad": "zero gradient"}


def badges_html(rows: list[dict], streak: int = STREAK) -> str:
    """The warnings as short marks for a table cell (the sentence as the tooltip)."""
    return " ".join(f'<b class="mvp-rej" data-signal="{k}" title="{esc(t)}">{SHORT[k]}</b>'
                    for k, t in warnings(rows, streak)) or "ok"

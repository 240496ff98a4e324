"""The fine-grained MVP reward (docs/ARCHITECTURE.md, "Reward"), as pure functions, and the one definition
of the answer format it reads (`render_answer`, `FORMAT_HINT`): the prompt, the SFT targets and the exports
write answers with `render_answer`, so every one of them scores full reward here."""
from __future__ import annotations

import re
from dataclasses import dataclass

TERMS = ("format", "selection", "order", "exact")
# Default weights: the method's (0.1 format, 0.3 each other term). The total is the weighted MEAN of the
# terms (weights divided by their sum), so it stays in [0, 1] for any accepted weights without clipping, and an
# exact answer (every term 1) scores strictly above every other answer whenever the exact weight is above 0.
# Clipping a sum instead let a wrong answer tie the right one (format 5, order 5: "A" for "C, E" scored 1.0).
DEFAULT_WEIGHTS = {"format": 0.1, "selection": 0.3, "order": 0.3, "exact": 0.3}
MAX_WEIGHT = 100.0
MIN_WEIGHT = 1e-6   # a positive weight below this would vanish in float sums (exact could tie)


def check_weights(weights: dict) -> dict:
    """The one rule for reward weights: known terms, each in [0, MAX_WEIGHT], not all 0; missing terms take
    the defaults. Raises ValueError with one line (config models turn it into their own error)."""
    unknown = set(weights) - set(TERMS)
    if unknown:
        raise ValueError(f"reward_weights has unknown terms: {', '.join(sorted(unknown))} (known: {', '.join(TERMS)})")
    bad = {k: w for k, w in weights.items()
           if not (isinstance(w, (int, float)) and (w == 0 or MIN_WEIGHT <= w <= MAX_WEIGHT))}
    if bad:
        raise ValueError(f"reward_weights must each be 0 or in [{MIN_WEIGHT:g}, {MAX_WEIGHT:g}], got {bad}")
    merged = {**DEFAULT_WEIGHTS, **{k: float(w) for k, w in weights.items()}}
    if sum(merged.values()) <= 0:
        raise ValueError("reward_weights are all 0: no term would count")
    return merged

# The answer format, defined once: a think block, then the labels in order, comma separated.
FORMAT_HINT = "<think>...</think><answer>{example}</answer>"   # shown to the model in the prompt


def render_answer(labels: list[str], think: str = "") -> str:
    """The well-formed completion for `labels` with reasoning `think` (the format `extract_answer` reads)."""
    return f"<think>{think}</think><answer>{', '.join(labels)}</answer>"


# Tags tolerate case and inner spacing ("< Answer >", "</ answer>"): small models drift on these.
_THINK = re.compile(r"<\s*think\s*>(.*?)<\s*/\s*think\s*>", re.S | re.I)
_ANSWER = re.compile(r"<\s*answer\s*>(.*?)<\s*/\s*answer\s*>", re.S | re.I)
_FULL = re.compile(r"^\s*<\s*think\s*>(.*?)<\s*/\s*think\s*>\s*<\s*answer\s*>(.*?)<\s*/\s*answer\s*>\s*$",
                   re.S | re.I)
# One label: a single letter, optionally wrapped in brackets, quotes or markdown emphasis and followed
# by a period ("(c)", "[A]", "**C**", "C."); anything else makes the answer unparseable.
_TOKEN = re.compile(r"^[\(\[\{'\"*`]*\s*([a-z])\s*[\)\]\}'\"*`.:]*$", re.I)
# Words a model puts around labels ("Option C", "options A and B", "frame C"): dropped before splitting.
_KEYWORDS = re.compile(r"\b(?:options?|frames?|labels?)\b\s*:?", re.I)
# Separators between labels: commas, semicolons, arrows, "then", "and", closing/opening brackets,
# or plain whitespace.
_SEP = re.compile(r"\s*(?:,|;|/|\||->|=>|→|>|\s+then\s+|\s+and\s+|\]\s*\[|\)\s*\(|\s+)\s*", re.I)


@dataclass
class RewardTerms:
    format: float
    selection: float
    order: float
    exact: float
    total: float
    labels: list[str]


def parse_labels(answer_text: str) -> list[str] | None:
    """'C, A, F' / '[c][a]' / 'Option C then Option A' / 'options C and A' -> ['C', 'A', ...];
    None when it does not parse (empty, a word that is not a label, "AB", ...)."""
    text = _KEYWORDS.sub(" ", answer_text).strip()
    # Outer brackets around the whole list: "[C, A, F]", "(C A F)".
    while len(text) >= 2 and text[0] + text[-1] in ("[]", "()", "{}"):
        text = text[1:-1].strip()
    if not text:
        return None
    labels = []
    for p in _SEP.split(text):
        if not p:
            continue
        m = _TOKEN.match(p)
        if not m:
            return None
        labels.append(m.group(1).upper())
    return labels or None


def extract_answer(completion: str) -> tuple[bool, list[str] | None]:
    """(format_ok, labels). format_ok needs exactly one think block, then one answer block that parses."""
    answers = _ANSWER.findall(completion)
    labels = parse_labels(answers[-1]) if answers else None
    well_formed = (_FULL.match(completion) is not None and len(_THINK.findall(completion)) == 1
                   and len(answers) == 1)
    return (well_formed and labels is not None), labels


def split_completion(completion: str) -> tuple[str, str | None]:
    """(reasoning, answer text) as the parser reads them, for display: the first think block (the
    whole completion when there is none) and the last answer block (None when there is none)."""
    think = _THINK.search(completion)
    answers = _ANSWER.findall(completion)
    return ((think.group(1) if think else completion).strip(), answers[-1].strip() if answers else None)


def score_labels(pred: list[str] | None, answer: list[str], pool: list[str]) -> tuple[float, float, float]:
    """(selection, order, exact) for a predicted label list. Invalid lists score 0 on all three:
    more labels than targets (no credit for listing every option), a repeated label, or a label
    outside the pool."""
    if not pred:
        return 0.0, 0.0, 0.0
    m = len(answer)
    if len(pred) > m or len(set(pred)) != len(pred) or any(p not in pool for p in pred):
        return 0.0, 0.0, 0.0
    targets = set(answer)
    selection = len(targets.intersection(pred)) / m
    rank = {lab: i for i, lab in enumerate(answer)}
    chosen = [p for p in pred if p in targets]
    pairs = [(a, b) for i, a in enumerate(chosen) for b in chosen[i + 1:]]
    if pairs:
        order = sum(rank[a] < rank[b] for a, b in pairs) / len(pairs)
    else:
        # No pair to compare. With m == 1 a puzzle has no order to get wrong, so the right single
        # label earns it (the exact answer then scores 1, as for m >= 2); otherwise 0.
        order = 1.0 if (m == 1 and chosen) else 0.0
    exact = 1.0 if list(pred) == list(answer) else 0.0
    return selection, order, exact


def score_completion(completion: str, answer: list[str], pool: list[str],
                     weights: dict | None = None) -> RewardTerms:
    w = check_weights(weights) if weights else DEFAULT_WEIGHTS
    fmt_ok, labels = extract_answer(completion)
    sel, order, exact = score_labels(labels, answer, pool)
    fmt = 1.0 if fmt_ok else 0.0
    total = (w["format"] * fmt + w["selection"] * sel + w["order"] * order + w["exact"] * exact) / sum(w.values())
    return RewardTerms(fmt, sel, order, exact, total, labels or [])


def score_prediction(labels: list[str], answer: list[str], pool: list[str],
                     weights: dict | None = None) -> RewardTerms:
    """Score a label list directly (a heuristic solver's output), as if well formatted."""
    return score_completion(render_answer(labels), answer, pool, weights)

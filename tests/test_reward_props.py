"""Property tests of the reward (hypothesis): bounds, the exact answer, and no credit for gaming."""
from __future__ import annotations

import string

from hypothesis import given, settings
from hypothesis import strategies as st

from mvp_core.puzzle import LABELS
from mvp_core.reward import DEFAULT_WEIGHTS, extract_answer, parse_labels, score_completion

TERMS = ("format", "selection", "order", "exact", "total")
settings.register_profile("mvp", max_examples=300, deadline=None)
settings.load_profile("mvp")


@st.composite
def puzzles(draw):
    """(answer, pool): m targets in temporal order among m + l labelled options."""
    m = draw(st.integers(1, 6))
    l = draw(st.integers(1, 8))
    pool = list(LABELS[: m + l])
    answer = draw(st.permutations(pool))[:m]
    return answer, pool


def fmt(labels, sep=", ", think="reasoning"):
    return f"<think>{think}</think><answer>{sep.join(labels)}</answer>"


def only_format(t):
    return t.selection == 0 and t.order == 0 and t.exact == 0 and t.total <= DEFAULT_WEIGHTS["format"] + 1e-12


@given(st.text(), puzzles())
def test_every_term_in_unit_interval_for_any_text(text, pz):
    answer, pool = pz
    t = score_completion(text, answer, pool)
    assert all(0.0 <= getattr(t, k) <= 1.0 for k in TERMS)


@given(puzzles(), st.lists(st.sampled_from(LABELS), max_size=10),
       st.sampled_from([", ", ",", " ", "; ", " -> ", " then "]))
def test_every_term_in_unit_interval_for_any_label_list(pz, labels, sep):
    answer, pool = pz
    t = score_completion(fmt(labels, sep), answer, pool)
    assert all(0.0 <= getattr(t, k) <= 1.0 for k in TERMS)
    assert t.format == (1.0 if labels else 0.0)


@given(puzzles(), st.sampled_from([", ", ",", " ", ";", " -> "]), st.booleans(),
       st.sampled_from(["", "Option ", "option "]), st.text(alphabet=string.ascii_letters + " .,", max_size=40))
def test_exact_answer_scores_one(pz, sep, lower, prefix, think):
    answer, pool = pz
    labels = [prefix + (a.lower() if lower else a) for a in answer]
    t = score_completion(fmt(labels, sep, think), answer, pool)
    assert (t.format, t.selection, t.order, t.exact) == (1.0, 1.0, 1.0, 1.0)
    assert abs(t.total - 1.0) < 1e-9
    assert t.labels == answer


@given(puzzles(), st.randoms(use_true_random=False))
def test_listing_every_option_earns_only_format(pz, rnd):
    answer, pool = pz
    every = list(pool)
    rnd.shuffle(every)
    t = score_completion(fmt(every), answer, pool)
    assert t.format == 1.0 and only_format(t)


@given(puzzles(), st.data())
def test_a_repeated_label_earns_only_format(pz, data):
    answer, pool = pz
    pred = list(answer)
    dup = data.draw(st.sampled_from(pred))
    pred.insert(data.draw(st.integers(0, len(pred))), dup)
    pred = pred[: max(2, len(answer))] if len(answer) >= 2 else pred   # keep the length <= m when we can
    if len(set(pred)) == len(pred):
        pred = [dup, dup]
    assert only_format(score_completion(fmt(pred), answer, pool))


@given(puzzles(), st.data())
def test_a_label_outside_the_pool_earns_only_format(pz, data):
    answer, pool = pz
    outside = data.draw(st.sampled_from([x for x in LABELS if x not in pool]))
    pred = list(answer)
    pred[data.draw(st.integers(0, len(pred) - 1))] = outside
    assert only_format(score_completion(fmt(pred), answer, pool))


@given(puzzles(), st.sampled_from(["", " ", "\n", "[]", "()", "none", "Option"]))
def test_an_empty_answer_earns_nothing(pz, body):
    answer, pool = pz
    t = score_completion(f"<think>x</think><answer>{body}</answer>", answer, pool)
    assert only_format(t) and t.format == 0.0 and t.total == 0.0


@given(puzzles(), st.data())
def test_subsets_in_order_get_partial_credit_below_exact(pz, data):
    answer, pool = pz
    k = data.draw(st.integers(1, len(answer)))
    idx = sorted(data.draw(st.permutations(range(len(answer))))[:k])
    pred = [answer[i] for i in idx]
    t = score_completion(fmt(pred), answer, pool)
    assert abs(t.selection - k / len(answer)) < 1e-9
    assert t.order == (1.0 if k >= 2 or len(answer) == 1 else 0.0)
    assert (t.exact == 1.0) == (k == len(answer))
    assert t.total <= 1.0


@given(st.text(max_size=60))
def test_parser_never_raises_and_returns_letters(text):
    labels = parse_labels(text)
    assert labels is None or (labels and all(len(x) == 1 and x in LABELS for x in labels))
    ok, _ = extract_answer(text)
    assert ok in (True, False)

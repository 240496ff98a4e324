"""Reward weights (mvp_core/reward.py, check_weights): for ANY weights a run accepts, the total stays in
[0, 1] without clipping and an exact answer scores strictly above every non-exact answer when the exact
weight is above 0 (clipped sums used to let "A" for "C, E" score 1.0, the same as the exact answer)."""
from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mvp_core.errors import UserError
from mvp_core.reward import MAX_WEIGHT, MIN_WEIGHT, TERMS, check_weights, score_completion
from mvp_core.train.config import GRPOConfig

POOL = list("ABCDEFG")


def wrap(labels: list[str]) -> str:
    return "<think>t</think><answer>" + ", ".join(labels) + "</answer>"


weights_st = st.fixed_dictionaries({t: st.one_of(st.just(0.0), st.floats(MIN_WEIGHT, MAX_WEIGHT)) for t in TERMS}).filter(
    lambda w: w["exact"] > 0)


@st.composite
def puzzle_and_guess(draw):
    m = draw(st.integers(1, 4))
    answer = draw(st.permutations(POOL))[:m]
    guess = draw(st.lists(st.sampled_from(POOL), min_size=0, max_size=5, unique=draw(st.booleans())))
    well_formed = draw(st.booleans())
    text = wrap(guess) if well_formed else ", ".join(guess)
    return answer, guess, text


@settings(max_examples=400, deadline=None)
@given(w=weights_st, case=puzzle_and_guess())
def test_exact_answer_scores_strictly_highest(w, case):
    answer, guess, text = case
    exact = score_completion(wrap(answer), answer, POOL, w)
    other = score_completion(text, answer, POOL, w)
    assert 0.0 <= other.total <= 1.0 and 0.0 <= exact.total <= 1.0
    if guess != answer or text != wrap(answer):
        if other.exact == 0.0:
            assert exact.total > other.total, (w, answer, text, exact.total, other.total)


def test_the_reported_counterexample():
    w = {"format": 5, "order": 5, "selection": 0.5, "exact": 0.5}
    right = score_completion(wrap(["C", "E"]), ["C", "E"], POOL, w).total
    wrong = score_completion(wrap(["A"]), ["C", "E"], POOL, w).total
    assert right == pytest.approx(1.0) and wrong < right


def test_default_weights_keep_their_meaning():
    t = score_completion(wrap(["C", "A"]), ["C", "E"], POOL)   # one of two selected; order needs 2
    assert t.total == pytest.approx(0.1 + 0.3 * 0.5)


@pytest.mark.parametrize("bad, says", [({"format": -1}, "must each be"), ({"bogus": 1}, "unknown"),
                                       ({t: 0 for t in TERMS}, "all 0"), ({"exact": 101}, "must each be"),
                                       ({"exact": 1e-300}, "must each be")])
def test_refused_weights_say_why(bad, says):
    with pytest.raises(ValueError, match=says):
        check_weights(bad)
    with pytest.raises(UserError, match=says):
        GRPOConfig(reward_weights=bad)

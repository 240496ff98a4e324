"""Answer parsing and the reward on hand-picked answers (the properties are in
test_reward_props.py)."""
from __future__ import annotations

import pytest

from mvp_core.reward import (
    DEFAULT_WEIGHTS,
    extract_answer,
    parse_labels,
    score_completion,
    score_labels,
    score_prediction,
)

POOL = list("ABCDEFG")
ANSWER = ["C", "A", "F"]


def wrap(ans: str, think: str = "I compare the frames.") -> str:
    return f"<think>{think}</think><answer>{ans}</answer>"


@pytest.mark.parametrize("text,labels", [
    ("C, A, F", ["C", "A", "F"]),
    ("c,a,f", ["C", "A", "F"]),
    ("  C ,A ,  F  ", ["C", "A", "F"]),
    ("[C, A, F]", ["C", "A", "F"]),
    ("(C, A, F)", ["C", "A", "F"]),
    ("[C][A][F]", ["C", "A", "F"]),
    ("(c) (a) (f)", ["C", "A", "F"]),
    ("Option C, Option A, Option F", ["C", "A", "F"]),
    ("option c then option a then option f", ["C", "A", "F"]),
    ("Options C, A and F", ["C", "A", "F"]),
    ("C -> A -> F", ["C", "A", "F"]),
    ("C → A → F", ["C", "A", "F"]),
    ("C A F", ["C", "A", "F"]),
    ("C; A; F.", ["C", "A", "F"]),
    ("**C**, **A**, **F**", ["C", "A", "F"]),
    ("'C', 'A', 'F'", ["C", "A", "F"]),
    ("C", ["C"]),
    ("", None),
    ("   ", None),
    ("[]", None),
    ("CAF", None),
    ("The answer is C, A, F", None),
    ("C, A, 3", None),
    ("C,, A", ["C", "A"]),
])
def test_parse_labels(text, labels):
    assert parse_labels(text) == labels


@pytest.mark.parametrize("completion,fmt_ok", [
    (wrap("C, A, F"), True),
    ("  <think>x</think>\n<answer>C, A, F</answer>\n", True),
    ("<THINK>x</THINK><Answer>C, A, F</Answer>", True),
    ("< think >x</ think >< answer >C, A, F</ answer >", True),
    ("<think></think><answer>C</answer>", True),
    ("<answer>C, A, F</answer>", False),                                   # no think block
    ("<think>x</think>", False),                                           # no answer block
    ("<answer>C, A, F</answer><think>x</think>", False),                   # wrong order
    ("<think>a</think><think>b</think><answer>C</answer>", False),         # two think blocks
    ("<think>a</think><answer>C</answer><answer>A</answer>", False),       # two answer blocks
    ("Sure! <think>x</think><answer>C, A, F</answer>", False),             # text outside the blocks
    (wrap("no idea"), False),                                              # answer does not parse
    (wrap(""), False),
])
def test_format(completion, fmt_ok):
    assert extract_answer(completion)[0] is fmt_ok


def test_terms_on_examples():
    t = score_completion(wrap("C, A, F"), ANSWER, POOL)
    assert (t.format, t.selection, t.order, t.exact, t.total) == (1, 1, 1, 1, 1)
    t = score_completion(wrap("A, C, F"), ANSWER, POOL)          # right frames, one pair swapped
    assert t.selection == 1 and t.order == pytest.approx(2 / 3) and t.exact == 0
    assert t.total == pytest.approx(0.1 + 0.3 + 0.3 * 2 / 3)
    t = score_completion(wrap("C, B"), ANSWER, POOL)             # one target, one distractor
    assert t.selection == pytest.approx(1 / 3) and t.order == 0 and t.exact == 0
    t = score_completion(wrap("A, F"), ANSWER, POOL)             # two targets in order, one missing
    assert t.selection == pytest.approx(2 / 3) and t.order == 1 and t.exact == 0
    t = score_completion("<answer>C, A, F</answer>", ANSWER, POOL)  # bad format keeps the content terms
    assert t.format == 0 and t.exact == 1 and t.total == pytest.approx(0.9)
    t = score_completion(wrap("F, A, C"), ANSWER, POOL)          # fully reversed
    assert t.order == 0 and t.selection == 1


def test_invalid_lists_score_nothing():
    assert score_labels(list("ABCDEFG"), ANSWER, POOL) == (0, 0, 0)      # every option
    assert score_labels(["C", "C", "A"], ANSWER, POOL) == (0, 0, 0)      # a repeat
    assert score_labels(["C", "A", "Z"], ANSWER, POOL) == (0, 0, 0)      # outside the pool
    assert score_labels([], ANSWER, POOL) == (0, 0, 0)
    assert score_labels(None, ANSWER, POOL) == (0, 0, 0)


def test_single_target_exact_scores_one():
    t = score_completion(wrap("B"), ["B"], list("ABCDE"))
    assert t.total == pytest.approx(1.0)
    assert score_completion(wrap("A"), ["B"], list("ABCDE")).total == pytest.approx(0.1)


def test_weights_and_solver_scoring():
    w = {"format": 0.0, "selection": 0.0, "order": 0.0, "exact": 1.0}
    assert score_completion(wrap("C, A, F"), ANSWER, POOL, w).total == 1
    assert score_completion(wrap("C, A"), ANSWER, POOL, w).total == 0
    assert score_prediction(["C", "A", "F"], ANSWER, POOL).total == 1
    assert score_prediction([], ANSWER, POOL).total == 0
    assert sum(DEFAULT_WEIGHTS.values()) == pytest.approx(1.0)


def test_split_completion_reads_what_the_parser_reads():
    """The rollouts page shows the reasoning and answer through this, so a tag the reward accepts
    ("< Answer >", "</ answer>") is shown too."""
    from mvp_core.reward import split_completion
    text = "< think > look at the gap </think>\n< Answer > C, A </ answer >"
    assert split_completion(text) == ("look at the gap", "C, A")
    assert extract_answer(text) == (True, ["C", "A"])
    assert split_completion("no tags") == ("no tags", None)
    assert split_completion("<answer>B</answer><answer>C</answer>")[1] == "C"    # the one scored

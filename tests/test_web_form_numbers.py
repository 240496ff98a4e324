"""Numbers the web forms send, checked in one place (app.web.common.form_number): what Gradio's
widgets let through over HTTP (NaN compares false with their bounds; an emptied field is None) is a
one-line error, never a silently accepted value (a NaN split fraction used to pass the sum check)."""
from __future__ import annotations

import math

import pytest

from app.web.common import form_number
from app.web.pages.data.ops import parse_splits
from mvp_core.errors import UserError


@pytest.mark.parametrize("value,whole,default,expect", [
    (3, True, None, 3), (3.0, True, None, 3), (0.25, False, None, 0.25), (None, True, 8, 8), ("", False, 0.0, 0.0)])
def test_good_numbers(value, whole, default, expect):
    got = form_number("x", value, whole, default)
    assert got == expect and type(got) is type(expect)


@pytest.mark.parametrize("value,whole,words", [
    (None, False, "x is empty"), (math.nan, False, "x must be a finite number"),
    (math.inf, True, "x must be a finite number"), (2.5, True, "x must be a whole number, not 2.5"),
    ("12; rm -rf /", False, "x must be a number"), (True, False, "x must be a number")])
def test_bad_numbers_are_one_line(value, whole, words):
    with pytest.raises(UserError, match=words) as e:
        form_number("x", value, whole)
    assert "\n" not in str(e.value)


@pytest.mark.parametrize("fracs,ok", [((0.8, 0.1, 0.1), True), ((None, None, 1.0), True),
                                      ((math.nan, 0.5, 0.5), False), ((0.5, 0.5, math.inf), False),
                                      ((0.9, 0.2, 0.0), False), ((-0.2, 0.6, 0.6), False)])
def test_split_fractions(fracs, ok):
    if ok:
        assert math.isclose(sum(parse_splits(*fracs).values()), 1.0)
    else:
        with pytest.raises(UserError):
            parse_splits(*fracs)

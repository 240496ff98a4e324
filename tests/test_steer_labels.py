"""VideoLLM steering labels from curator verdicts (docs/steer.md): the majority rule, and the read
over `puzzle_verdicts` on both engines."""
from __future__ import annotations

import pytest

from db import review
from db.runs.steer_labels import curator_verdicts
from db.users.accounts import add_user
from mvp_core.errors import UserError
from mvp_core.steer.puzzles import verdict_labels


def test_verdict_majority_skips_and_ties():
    rows = [{"puzzle_id": "p1", "verdict": "accept"}, {"puzzle_id": "p1", "verdict": "accept"},
            {"puzzle_id": "p1", "verdict": "reject"},
            {"puzzle_id": "p2", "verdict": "reject"}, {"puzzle_id": "p2", "verdict": "skip"},
            {"puzzle_id": "p3", "verdict": "accept"}, {"puzzle_id": "p3", "verdict": "reject"},
            {"puzzle_id": "p4", "verdict": "skip"}]
    assert verdict_labels(rows) == {"p1": False, "p2": True}   # p3 tied, p4 only skipped: no label
    with pytest.raises(UserError, match="unknown curator verdict"):
        verdict_labels([{"puzzle_id": "p1", "verdict": "maybe"}])


def test_curator_verdicts_read_current_verdicts(store_db):
    with store_db.Session() as s:
        a, b = (add_user(s, n, "curator", "password-" + n)[0].id for n in ("va", "vb"))
        s.commit()
        with pytest.raises(UserError, match="no curator verdicts"):
            curator_verdicts(s)
        p, q = (r["id"] for r in store_db.records[:2])
        review.submit_verdict(s, a, p, "accept")
        review.submit_verdict(s, b, p, "reject")
        review.submit_verdict(s, b, p, "accept")          # b changes their mind: only the current verdict counts
        review.submit_verdict(s, a, q, "reject")
        rows = curator_verdicts(s)
        got = sorted((r["puzzle_id"], r["verdict"]) for r in rows)
        assert got == sorted([(p, "accept"), (p, "accept"), (q, "reject")])
        assert verdict_labels(rows) == {p: False, q: True}
        assert [r["puzzle_id"] for r in curator_verdicts(s, [q])] == [q]

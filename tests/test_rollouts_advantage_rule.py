"""The Rollouts page's advantage column follows the run's own config ("as in training" used to be the
default rule for every run): a run trained with scale_rewards=none shows r - mean, one with group the
group-scaled value, and the caption names the rule (db/runs/rollout_views.py group, ADVANTAGE_RULES)."""
from __future__ import annotations

import pytest
from sqlalchemy import select

from db.runs import rollout_views as rd
from testkit.store import store_answers


@pytest.mark.parametrize("rule", ["group", "none", "batch"])
def test_computed_advantage_uses_the_runs_scale_rewards(store_db, rule):
    from db.models.runs import Rollout, Run
    store_answers(store_db.Session, "r1", "train", "tiny", 2, "ckpt-2", 4, seed=3)
    with store_db.Session() as s:
        s.get(Run, "r1").config = {"scale_rewards": rule}
        s.commit()
        pid = s.scalars(select(Rollout.puzzle_id).where(Rollout.run_id == "r1")).first()
        answers = rd.group(s, "r1|", pid)
    totals = [a["total"] for a in answers]
    mean = sum(totals) / len(totals)
    std = (sum((t - mean) ** 2 for t in totals) / (len(totals) - 1)) ** 0.5
    want = [t - mean for t in totals] if rule == "none" else [(t - mean) / (std + 1e-4) for t in totals]
    assert [a["advantage"] for a in answers] == pytest.approx(want, abs=1e-6)
    assert all(a["advantage_computed"] and a["advantage_rule"] == rule for a in answers)
    assert rule in rd.ADVANTAGE_RULES[rule] or rule == "group"

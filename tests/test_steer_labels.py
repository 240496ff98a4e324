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


def test_stored_labels_gather_every_run_of_the_same_model(store_db):
    """Answers stored for one model in two runs (the demo's warm start answered its own puzzle shape,
    mostly right, and a new one, all wrong) label a bank together: both kinds exist."""
    from datetime import UTC, datetime

    from db.models.runs import Rollout, Run
    from db.runs.steer_labels import labelled_puzzles, rollout_answers
    recs = store_db.records[:4]
    with store_db.Session() as s:
        for i, rid in enumerate(("same-model-a", "same-model-b")):
            s.add(Run(id=rid, name=rid, kind="rollout", model_path="/models/warm-start", config={}, status="done",
                      created_at=datetime(2001, 1, 1 + i, tzinfo=UTC)))
        s.flush()
        for j, r in enumerate(recs):        # run a: the first two right; run b: the other two wrong
            s.add(Rollout(run_id="same-model-a" if j < 2 else "same-model-b", checkpoint_id=None, puzzle_id=r["id"],
                          sample_index=0, completion="x", chosen_labels=[], format=1.0, selection=1.0, order=1.0,
                          exact=1.0 if j < 2 else 0.0, total=1.0 if j < 2 else 0.1))
        s.commit()
        assert len(rollout_answers(s, "same-model-b")) == 4
        assert labelled_puzzles(s, "stored", "same-model-b") == {r["id"]: j >= 2 for j, r in enumerate(recs)}


def test_splits_by_video_share_out_each_kind():
    """Videos that are each all good or all bad (a model right on one shape, wrong on another): the
    validation and test splits each get a video of both kinds, and no video is in two splits."""
    import numpy as np

    from mvp_core.steer.splits import split_indices
    groups = [f"v{i}" for i in range(11) for _ in range(2)]
    bad = np.array([i >= 6 for i in range(11) for _ in range(2)])
    for seed in range(5):
        parts = split_indices(bad, 0.15, 0.15, seed, groups)
        for p in parts:
            assert bad[p].any() and not bad[p].all()
        seen = [{groups[i] for i in p} for p in parts]
        assert not (seen[0] & seen[1] or seen[0] & seen[2] or seen[1] & seen[2])

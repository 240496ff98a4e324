"""One group advantage: rollouts (`score_group`), the rollouts page (`db.runs.rollout_views`) and
training (`mvp_core.train.loss.group_advantages`) give the same number for the same group of
answers, scored by the real reward on a real puzzle."""
from __future__ import annotations

import sys

import numpy as np
import pytest
import torch

from db.runs import rollout_views
from db.runs.rollouts import RolloutStore
from mvp_core.train.loss import group_advantages
from mvp_core.model.rollout import score_group
from mvp_core.puzzle import Puzzle


def _answers(pz: Puzzle) -> list[tuple[str, int]]:
    """Eight answers of every quality: exact, reversed, partial, a distractor, unparsable, ..."""
    ans = list(pz.answer)
    other = next(o.label for o in pz.options if o.label not in ans)
    texts = [f"<think>t</think><answer>{', '.join(ans)}</answer>",
             f"<think>t</think><answer>{', '.join(reversed(ans))}</answer>",
             f"<think>t</think><answer>{ans[0]}</answer>",
             f"<think>t</think><answer>{other}</answer>",
             f"<think>t</think> <answer> {', '.join(ans[:-1] + [other])} </answer>",
             "no tags at all",
             f"<answer>{', '.join(ans)}</answer>",
             f"<think>t</think><answer>{', '.join(ans)}</answer>"]
    return [(t, 5) for t in texts]


def test_page_rollouts_and_training_agree(store_db):
    rec = store_db.records[0]
    pz = Puzzle.from_dict(rec)
    rows = score_group(pz, _answers(pz), list(range(8)))
    totals = [r["total"] for r in rows]
    assert len(set(totals)) >= 4                                   # a group with real spread
    training = group_advantages(torch.tensor(totals), 8).advantages.tolist()
    assert [r["advantage"] for r in rows] == training

    # the page: a run that stored no advantages gets the computed ones, one that did shows its own
    bare = RolloutStore(store_db.Session, "imported run")
    bare.add([{**r, "advantage": None} for r in rows])
    stored = RolloutStore(store_db.Session, "rollout run")
    stored.add(rows)
    with store_db.Session() as s:
        page = rollout_views.group(s, rollout_views.source_key(bare.run_id, None), pz.id)
        assert [a["advantage"] for a in page] == training and all(a["advantage_computed"] for a in page)
        assert [a["advantage"] for a in rollout_views.group(s, rollout_views.source_key(stored.run_id, None), pz.id)] == pytest.approx(training)
        summary = rollout_views.puzzles(s, rollout_views.source_key(bare.run_id, None), pz.video.id)
        ours = next(p for p in summary if p.puzzle_id == pz.id)
        assert ours.std == pytest.approx(float(np.std(totals, ddof=1)), rel=1e-6)
    # the copy the page used to have (population std, no epsilon) is ~0.94x of training's at G=8
    old = (np.array(totals) - np.mean(totals)) / np.std(totals)
    assert not np.allclose(old, training, rtol=1e-3)


def test_the_page_needs_no_torch_for_stored_advantages(store_db, monkeypatch):
    """Answers written by `mvp rollout` or the trainer carry their advantage: the Rollouts page's queries
    show them, and each group's std, without torch (which the server at rest does not hold)."""
    rec = store_db.records[0]
    pz = Puzzle.from_dict(rec)
    rows = score_group(pz, _answers(pz), list(range(8)))
    stored = RolloutStore(store_db.Session, "rollout run")
    stored.add(rows)
    monkeypatch.setitem(sys.modules, "torch", None)       # from here any `import torch` raises ImportError
    key = rollout_views.source_key(stored.run_id, None)
    with store_db.Session() as s:
        assert [a["advantage"] for a in rollout_views.group(s, key, pz.id)] == pytest.approx([r["advantage"] for r in rows])
        ours = next(p for p in rollout_views.puzzles(s, key, pz.video.id) if p.puzzle_id == pz.id)
    assert ours.std == pytest.approx(float(np.std([r["total"] for r in rows], ddof=1)), rel=1e-6)

"""The Rollouts page's pickers (app/web/pages/rollouts/choices.py) on both engines: read once while
nothing changes, and an answer, a checkpoint or a run's new name written after a read is in the
next one."""
from __future__ import annotations

from sqlalchemy import update

from app.web.pages.rollouts import choices as picks
from db.models.runs import Checkpoint, Rollout, Run
from db.runs import rollout_views as rd

RUN = "pick-run"


def _answer(s, pid: str, ck: int | None, sample: int = 0) -> None:
    s.add(Rollout(run_id=RUN, checkpoint_id=ck, puzzle_id=pid, sample_index=sample,
                  completion="<think>t</think><answer>A</answer>", chosen_labels=["A"], format=1.0,
                  selection=1.0, order=1.0, exact=1.0, total=1.0, advantage=0.0))


def test_choices_are_read_once_and_follow_every_write(store_db):
    recs = sorted(store_db.records, key=lambda r: r["id"])
    with store_db.Session() as s:
        s.add(Run(id=RUN, name=RUN, kind="train", model_path="m", config={}, status="done"))
        s.flush()
        _answer(s, recs[0]["id"], None)
        s.commit()
        picks._kept.clear()
        base = rd.source_key(RUN, None)
        assert picks.sources(s) == rd.sources(s) and [k for _, k in picks.sources(s)] == [base]
        vid = picks.videos(s, base)[0][1]
        assert [p.puzzle_id for p in picks.puzzles(s, base, vid)] == [p.puzzle_id for p in rd.puzzles(s, base, vid)]
        kept = picks._of(s)
        n = kept.computed
        picks.sources(s), picks.videos(s, base), picks.puzzles(s, base, vid)
        assert kept.computed == n                       # nothing changed: nothing read again

        same_video = next(r["id"] for r in recs[1:] if r["video"]["id"] == vid)
        _answer(s, same_video, None)                    # a new puzzle's answer: in the next list
        s.commit()
        assert {p.puzzle_id for p in picks.puzzles(s, base, vid)} == {recs[0]["id"], same_video}

        ck = Checkpoint(run_id=RUN, step=7, path="m/ck7")
        s.add(ck)
        s.flush()
        _answer(s, recs[0]["id"], ck.id)                # a new version
        s.commit()
        assert rd.source_key(RUN, ck.id) in {k for _, k in picks.sources(s)}

        s.execute(update(Run).where(Run.id == RUN).values(kind="rollout"))   # re-indexed in place
        s.commit()
        assert picks.sources(s) == rd.sources(s)


def test_puzzle_picker_lists_a_window_and_always_the_chosen_puzzle():
    many = [rd.PuzzleSummary(f"p{i:05d}", 4, 0.5, 0.1) for i in range(picks.PICKER_MAX * 3)]
    choices, label = picks.puzzle_picker(many, "p00010")
    assert [k for _, k in choices] == [x.puzzle_id for x in many[:picks.PICKER_MAX]]
    assert f"the first {picks.PICKER_MAX} of {len(many)}" in label
    late = many[-1].puzzle_id          # a puzzle the answers table opened, beyond the window: listed too
    choices, _ = picks.puzzle_picker(many, late)
    assert len(choices) == picks.PICKER_MAX + 1 and choices[-1] == (many[-1].label, late)
    few = many[:3]
    assert picks.puzzle_picker(few, None) == ([(x.label, x.puzzle_id) for x in few], picks.PUZZLE_LABEL)

"""The Rollouts answers table's queries (db/runs/answers_table.py) on both engines: rows per puzzle and
per answer, sorted, filtered and paged; the advantage it computes in SQL equals the trainer's
formula (what the puzzle view shows); group means and intervals equal the one bootstrap on the
answers themselves; the start model's result sits beside each puzzle."""
from __future__ import annotations

import random

import pytest
from pydantic import ValidationError

from db import analytics
from db.runs import answers_table as at
from db.runs import rollout_views as rd

RUN, G = "tbl-run", 3


@pytest.fixture
def answered(store_db):
    """Run RUN with answers of its start model (checkpoint NULL) and of its checkpoint at step 5:
    G answers per puzzle, totals drawn so some groups are all exact, some mixed, some zero."""
    from db.models.runs import Checkpoint, Rollout, Run
    analytics._caches.pop(store_db.engine.url.render_as_string(hide_password=False), None)
    rng = random.Random(3)
    want: dict[str, dict] = {}
    with store_db.Session() as s:
        s.add(Run(id=RUN, name=RUN, kind="train", model_path="m", config={}, status="done"))
        s.flush()
        from sqlalchemy import select

        from db.models import Puzzle
        video_of = dict(s.execute(select(Puzzle.id, Puzzle.video_id)).all())
        ck = Checkpoint(run_id=RUN, step=5, path="m/ck")
        s.add(ck)
        s.flush()
        for rec in store_db.records:
            for ck_id, key in ((None, "start"), (ck.id, "ckpt")):
                p = rng.choice([0.0, 0.5, 1.0])
                for g in range(G):
                    exact = 1.0 if rng.random() < p else 0.0
                    total = exact if exact else rng.choice([0.1, 0.4, 0.7])
                    text = "<think>" + "x" * rng.randint(1, 40) + "</think><answer>A</answer>"
                    s.add(Rollout(run_id=RUN, checkpoint_id=ck_id, puzzle_id=rec["id"], sample_index=g,
                                  completion=text, chosen_labels=["A"], format=1.0, selection=total,
                                  order=total, exact=exact, total=total))
                    want.setdefault(rec["id"], {"video": video_of[rec["id"]], "start": [], "ckpt": [], "len": []})
                    want[rec["id"]][key].append((exact, total))
                    if key == "ckpt":
                        want[rec["id"]]["len"].append(len(text))
        s.commit()
        key = rd.source_key(RUN, ck.id)
        start = rd.start_source(s, key, [k for _, k in rd.sources(s)])
    assert start == rd.source_key(RUN, None)
    yield store_db, key, start, want
    analytics._caches.pop(store_db.engine.url.render_as_string(hide_password=False), None)


def _mean(xs):
    return sum(xs) / len(xs)


def test_puzzle_rows_sorted_paged_and_beside_the_start_model(answered):
    db, key, start, want = answered
    q = at.AnswersQuery(sort="exact", descending=True, limit=4)
    rows, n = at.page(db.engine, key, q, start)
    assert n == len(want) and len(rows) == min(4, n)
    expect = sorted(want, key=lambda p: (-_mean([e for e, _ in want[p]["ckpt"]]), p))
    assert [r["puzzle"] for r in rows] == expect[:4]
    for r in rows:
        w = want[r["puzzle"]]
        assert r["answers"] == G and r["video_id"] == w["video"]
        assert r["exact"] == pytest.approx(_mean([e for e, _ in w["ckpt"]]))
        assert r["start_exact"] == pytest.approx(_mean([e for e, _ in w["start"]]))
        assert r["length"] == pytest.approx(_mean(w["len"]))
        assert r["kinds"]                                  # every sample puzzle has distractors
    rest, _ = at.page(db.engine, key, q.model_copy(update={"offset": 4, "limit": 500}), start)
    assert [r["puzzle"] for r in rows + rest] == expect     # pages join up, nothing twice
    past, n2 = at.page(db.engine, key, q.model_copy(update={"offset": 10_000}), start)
    assert past == [] and n2 == len(want)


def test_filters_by_video_kind_result_and_search(answered):
    db, key, start, want = answered
    vid = next(iter(want.values()))["video"]
    rows, n = at.page(db.engine, key, at.AnswersQuery(video=vid, limit=500), start)
    assert n == sum(1 for w in want.values() if w["video"] == vid) == len(rows)
    right, _ = at.page(db.engine, key, at.AnswersQuery(result="right", limit=500), start)
    assert {r["puzzle"] for r in right} == {p for p, w in want.items() if all(e == 1.0 for e, _ in w["ckpt"])}
    pid = sorted(want)[0]
    found, _ = at.page(db.engine, key, at.AnswersQuery(search=pid[-6:].upper(), limit=500), start)
    assert pid in {r["puzzle"] for r in found}
    kinds = at.kinds(db.engine, key)
    assert kinds
    with_kind, _ = at.page(db.engine, key, at.AnswersQuery(kind=kinds[0], limit=500), start)
    assert with_kind and all(kinds[0] in r["kinds"].split(", ") for r in with_kind)


def test_answer_rows_carry_the_trainers_advantage(answered):
    db, key, start, want = answered
    rows, n = at.page(db.engine, key, at.AnswersQuery(level="answer", sort="advantage", limit=500), start)
    assert n == G * len(want)
    advs = [round(r["advantage"], at.SORT_DECIMALS) for r in rows]     # values compare at SORT_DECIMALS
    assert advs == sorted(advs)
    with db.Session() as s:
        for pid in sorted(want)[:4]:
            shown = {a["sample"]: a["advantage"] for a in rd.group(s, key, pid)}
            mine = {r["sample"]: r["advantage"] for r in rows if r["puzzle"] == pid}
            assert mine == pytest.approx(shown, abs=1e-6)     # the trainer computes in float32


@pytest.mark.parametrize("by", ["video", "kind"])
def test_group_intervals_resample_videos(answered, by):
    from mvp_core.stats.bootstrap import cluster_mean_ci
    db, key, start, want = answered
    out = {g["group"]: g for g in at.groups(db.engine, key, by, at.AnswersQuery(), start)}
    assert out
    if by == "video":
        rows, _ = at.page(db.engine, key, at.AnswersQuery(limit=500), start)
        names = {r["video_id"]: r["video"] for r in rows}
        for vid, name in names.items():
            ex = [e for w in want.values() if w["video"] == vid for e, _ in w["ckpt"]]
            g = out[name]
            assert g["answers"] == len(ex) and g["videos"] == 1 and g["exact"] == pytest.approx(_mean(ex))
            assert g["exact_lo"] == g["exact_hi"] == pytest.approx(g["exact"])   # one video: no spread
    else:
        for kind, g in out.items():
            rows, _ = at.page(db.engine, key, at.AnswersQuery(kind=kind, limit=500), start)
            pairs = sorted((want[r["puzzle"]]["video"], e) for r in rows for e, _ in want[r["puzzle"]]["ckpt"])
            ex, vids = [e for _, e in pairs], [v for v, _ in pairs]
            iv = cluster_mean_ci(ex, vids)          # videos in id order, as the query lists them
            assert g["puzzles"] == len(rows) and g["answers"] == len(ex)
            assert (g["exact"], g["exact_lo"], g["exact_hi"]) == pytest.approx((iv.mean, iv.lo, iv.hi))
            assert g["start_exact"] == pytest.approx(_mean([e for r in rows for e, _ in want[r["puzzle"]]["start"]]))


def test_bad_queries_are_one_line():
    with pytest.raises(ValidationError, match="cannot sort puzzle rows by 'advantage'"):
        at.AnswersQuery(sort="advantage")
    with pytest.raises(ValidationError):
        at.AnswersQuery(limit=at.MAX_PAGE + 1)
    with pytest.raises(ValueError, match="group by one of"):
        at.groups(None, "r|base", "split", at.AnswersQuery())

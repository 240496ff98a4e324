"""DuckDB analytics on both engines, checked against counts computed by hand from the same verdicts."""
from __future__ import annotations

import pytest

from db import analytics, review
from db.models.runs import Rollout, Run
from db.sets.curated import freeze_set
from db.users.accounts import add_user


def test_analytics_questions(store_db):
    recs = sorted(store_db.records, key=lambda r: r["id"])
    eng = store_db.engine
    assert analytics.acceptance_by_kind(eng) == []          # nothing judged yet: empty, not an error
    with store_db.Session() as s:
        a = add_user(s, "a", "curator", "a-password-1")[0].id
        b = add_user(s, "b", "curator", "a-password-1")[0].id
        s.commit()
        expected_rej: dict[str, int] = {}
        for i, r in enumerate(recs):
            review.submit_verdict(s, a, r["id"], "accept" if i % 3 else "reject", seconds=2.0 + i)
            if i < 4:
                review.submit_verdict(s, b, r["id"], "accept", seconds=3.0)
        for r in recs[:5]:
            d = next(o for o in r["options"] if o["kind"] != "target")
            review.set_option_verdict(s, a, r["id"], d["label"], "reject", "near_duplicate")
            expected_rej[d["kind"]] = expected_rej.get(d["kind"], 0) + 1
        # an undone reject must not count (on a puzzle past the five above)
        assert len(recs) >= 6, len(recs)
        d = next(o for o in recs[5]["options"] if o["kind"] != "target")
        review.set_option_verdict(s, a, recs[5]["id"], d["label"], "reject", "other")
        review.undo_last(s, a)
    rows = {r["kind"]: r for r in analytics.acceptance_by_kind(eng)}
    judged: dict[str, int] = {}
    for i, r in enumerate(recs):
        for o in r["options"]:
            if o["kind"] != "target":
                judged[o["kind"]] = judged.get(o["kind"], 0) + (2 if i < 4 else 1)
    assert {k: v["judged"] for k, v in rows.items()} == judged
    assert {k: v["rejected"] for k, v in rows.items() if v["rejected"]} == expected_rej
    assert rows["neighbor"]["top_reason"] in (None, "near_duplicate")

    hard = analytics.acceptance_by_hardness(eng)
    assert sum(h["judged"] for h in hard) == sum(judged.values()) and all(h["lo"] < h["hi"] for h in hard)

    vids = analytics.acceptance_by_video(eng)
    assert sum(v["verdicts"] for v in vids) == len(recs) + 4
    n_acc = sum(1 for i in range(len(recs)) if i % 3) + 4
    assert sum(v["accepted"] for v in vids) == n_acc

    thr = {r["curator"]: r for r in analytics.curator_throughput(eng)}
    assert thr["a"]["verdicts"] == len(recs) and thr["b"]["verdicts"] == 4 and thr["b"]["median_seconds"] == 3.0

    ag = analytics.curator_agreement(eng)
    assert len(ag) == 1 and ag[0]["common"] == 4
    assert ag[0]["observed"] == sum(1 for i in range(4) if i % 3) / 4

    # rollouts on a frozen set: labels are mapped through the set's (re-lettered) records
    with store_db.Session() as s:
        freeze_set(s, "s1", min_distractors=1)
        s.add(Run(id="r1", name="r1", kind="rollout", model_path="m", set_name="s1", config={}, status="done"))
        s.flush()
        from db.sets.curated import load_set
        items = load_set(s, "s1")
        want: dict[str, int] = {}
        for i, rec in enumerate(items):
            picks = [rec["options"][0]["label"], rec["options"][-1]["label"]]
            for lab in picks:
                k = next(o["kind"] for o in rec["options"] if o["label"] == lab)
                want[k] = want.get(k, 0) + 1
            s.add(Rollout(run_id="r1", checkpoint_id=None, puzzle_id=rec["id"], sample_index=0,
                          completion=f"<think></think><answer>{', '.join(picks)}</answer>", chosen_labels=picks,
                          format=1.0, selection=0.5, order=0.0, exact=0.0, total=0.25))
        s.commit()
    picks = {r["kind"]: r["picks"] for r in analytics.model_picks_by_kind(eng, run_id="r1")}
    assert picks == want
    assert abs(sum(r["share"] for r in analytics.model_picks_by_kind(eng)) - 1.0) < 1e-3


@pytest.fixture
def fresh_analytics(store_db):
    """No DuckDB copy of this database in the process before or after the test (PostgreSQL test
    databases keep their URL across tests)."""
    analytics._caches.pop(store_db.engine.url.render_as_string(hide_password=False), None)
    yield
    analytics._caches.pop(store_db.engine.url.render_as_string(hide_password=False), None)


def _all_questions(eng) -> dict[str, list]:
    """Every question's rows, floats rounded (a cold and a grown copy may sum in a different order)."""
    return {name: sorted(repr({k: round(v, 6) if isinstance(v, float) else v for k, v in r.items()})
                         for r in fn(eng)) for name, fn in analytics.QUESTIONS.items()}


@pytest.mark.parametrize("bulk", [False, True], ids=["small", "bulk"])
def test_cold_copy_matches_replayed_history(store_db, fresh_analytics, monkeypatch, bulk):
    """The first call in a process reads the option verdicts from the current table (and only the puzzle
    verdicts from the history); it must give exactly what a copy grown event by event gives, after
    changes, undos and a requeue. `bulk`: every pull takes the path of big pulls (ADBC on PostgreSQL)."""
    if bulk:
        monkeypatch.setattr(analytics.pull, "BULK_MIN_ROWS", -1)
    recs = sorted(store_db.records, key=lambda r: r["id"])
    eng = store_db.engine
    dist = [[o["label"] for o in r["options"] if o["kind"] != "target"] for r in recs]
    with store_db.Session() as s:
        a = add_user(s, "a", "curator", "a-password-1")[0].id
        b = add_user(s, "b", "curator", "a-password-1")[0].id
        boss = add_user(s, "rita", "researcher", "a-password-1")[0].id
        s.commit()
        for i, r in enumerate(recs[:6]):
            review.submit_verdict(s, a, r["id"], "accept" if i % 2 else "reject", seconds=1.0 + i)
            review.set_option_verdict(s, a, r["id"], dist[i][0], "reject", "too_easy")
        assert analytics.acceptance_by_kind(eng)            # the copy now holds these events
        for i, r in enumerate(recs):
            review.submit_verdict(s, b, r["id"], "accept", seconds=2.5)
            review.set_option_verdict(s, b, r["id"], dist[i][-1], "reject", "ambiguous")
        review.set_option_verdict(s, a, recs[1]["id"], dist[1][0], "keep")      # a reject taken back
        review.set_option_verdict(s, a, recs[2]["id"], dist[2][1], "reject", "other")
        review.undo_last(s, a)                                                  # ... and undone
        review.submit_verdict(s, a, recs[3]["id"], "accept", seconds=4.0)       # a changed verdict
        review.requeue(s, boss, recs[4]["id"], reason="new round")              # clears a's and b's
        review.submit_verdict(s, b, recs[4]["id"], "reject", seconds=6.0)
    grown = _all_questions(eng)
    analytics._caches.clear()                                                   # a new process
    cold = _all_questions(eng)
    assert cold == grown
    kinds = {r["kind"]: r for r in analytics.acceptance_by_kind(eng)}
    assert sum(r["rejected"] for r in kinds.values()) == 4 + len(recs) - 1      # a: recs 0, 2, 3, 5; b: all but 4

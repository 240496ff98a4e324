"""Puzzles and videos per split of a frozen set (db/sets/split_summary.py), read by the database's JSON
functions on both engines, equal to counting the records themselves; kept per set after the first read
(a frozen set never changes), a new set read afresh."""
from __future__ import annotations

from collections import defaultdict

from sqlalchemy import event


def _freeze(Session, records, name: str, split: dict | None) -> None:
    from db import review
    from db.sets.curated import freeze_set
    from db.users.accounts import add_user
    with Session() as s:
        u = add_user(s, f"cur-{name}", "curator", "a-long-password-1")[0].id
        s.commit()
        for r in records:
            review.submit_verdict(s, u, r["id"], "accept")
        freeze_set(s, name, min_distractors=1, split=split)
        s.commit()


def _counted(records: list[dict]) -> dict:
    puzzles, videos = defaultdict(int), defaultdict(set)
    for r in records:
        puzzles[r.get("split") or ""] += 1
        videos[r.get("split") or ""].add(r["video"]["id"])
    return {k: {"puzzles": puzzles[k], "videos": len(videos[k])} for k in puzzles}


def test_split_summary_counts_what_the_records_hold_on_both_engines(store_db):
    from db.runs.rollout_views import set_splits, split_counts
    from db.sets.curated import load_set
    from db.sets.split_summary import split_summary
    _freeze(store_db.Session, store_db.records, "by-split", {"train": 0.5, "val": 0.25, "test": 0.25})
    with store_db.Session() as s:
        records = load_set(s, "by-split")
        got = split_summary(s, "by-split")
        assert got == _counted(records) and sum(v["puzzles"] for v in got.values()) == len(records)
        assert list(got) == [k for k in ("train", "val", "test") if k in got] and len(got) >= 2
        assert set_splits(s, "by-split") == sorted(got)
        assert split_counts(s, "by-split") == {k: v["puzzles"] for k, v in got.items()}
        # read once: the next call asks only for the set's row (its content hash), not its records
        statements: list[str] = []
        event.listen(store_db.engine, "before_cursor_execute", lambda *a: statements.append(a[2]))
        assert split_summary(s, "by-split") == got
        assert statements and not any("set_items" in q for q in statements), statements


def test_the_kept_summaries_are_bounded_and_the_oldest_is_read_again(store_db, monkeypatch):
    """The server keeps the newest KEEP_SETS summaries: one more set drops the least recently shown one,
    which is then read from its records again (and counted the same)."""
    from db.sets import split_summary as summary
    monkeypatch.setattr(summary, "KEEP_SETS", 2)
    monkeypatch.setattr(summary, "_KEPT", type(summary._KEPT)())
    for name in ("b1", "b2", "b3"):
        _freeze(store_db.Session, store_db.records, name, {"train": 0.5, "val": 0.25, "test": 0.25})
    statements: list[str] = []
    event.listen(store_db.engine, "before_cursor_execute", lambda *a: statements.append(a[2]))
    with store_db.Session() as s:
        first = summary.split_summary(s, "b1")
        summary.split_summary(s, "b2")
        summary.split_summary(s, "b1")                      # b1 shown again: b2 is now the oldest
        summary.split_summary(s, "b3")                      # one over the bound: b2 goes
        assert len(summary._KEPT) == 2
        statements.clear()
        assert summary.split_summary(s, "b1") == first      # still kept: no record read
        assert not any("set_items" in q for q in statements), statements
        summary.split_summary(s, "b2")                      # dropped: read again
        assert any("set_items" in q for q in statements), statements

def test_a_set_frozen_without_splits_counts_under_no_split(store_db):
    """A set stored before splits existed (its records carry none), as `mvp import` of an old set stores it."""
    from db.runs.rollout_views import set_splits
    from db.sets.curated import store_set
    from db.sets.split_summary import split_summary
    from mvp_core.puzzle import canonical_json
    with store_db.Session() as s:
        store_set(s, "whole", [canonical_json({k: v for k, v in r.items() if k != "split"})
                               for r in store_db.records], 0, 1, {})
        s.commit()
    with store_db.Session() as s:
        got = split_summary(s, "whole")
        assert list(got) == [""] and got[""]["puzzles"] == len(store_db.records)
        assert got[""]["videos"] == len({r["video"]["id"] for r in store_db.records})
        assert set_splits(s, "whole") == []


def test_the_data_pages_set_table_counts_every_split(store_db):
    """The Data page's set table has a column per split, val included (it read the export's name for it,
    "validation", and showed 0 / 0), and a set without splits counts as train, as training reads it."""
    from types import SimpleNamespace

    from app.web.pages.data.ops import SET_HEADERS, set_rows
    from db.sets.curated import load_set
    from db.sets.split_summary import split_summary
    _freeze(store_db.Session, store_db.records, "table", {"train": 0.5, "val": 0.25, "test": 0.25})
    with store_db.Session() as s:
        want = split_summary(s, "table")
        n = len(load_set(s, "table"))
    row = dict(zip(SET_HEADERS, next(r for r in set_rows(SimpleNamespace(Session=store_db.Session))
                                     if r[0] == "table")))
    assert row["puzzles"] == n and want["val"]["puzzles"] > 0
    for k in ("train", "val", "test"):
        assert row[f"{k} puzzles / videos"] == f"{want[k]['puzzles']} / {want[k]['videos']}"

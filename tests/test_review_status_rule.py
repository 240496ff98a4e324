"""The review-status rule is written once (db/review/queue.py STATUS_RULE) and evaluated two ways:
in Python for one verdict (`derive_status`) and as SQL for every row when the overlap k changes
(`status_sql`, inside `set_overlap`). On SQLite and PostgreSQL both must give the same status for every
combination of accept and reject counts and k, and that status must be the documented one."""
from __future__ import annotations

import itertools

from sqlalchemy import literal, select, update

from db.models.curation import STATUSES, ReviewState
from db.review.queue import derive_status, set_overlap, status_sql

COUNTS, KS = range(0, 6), range(1, 5)
COMBOS = [(a, r, k) for k in KS for a in COUNTS for r in COUNTS]


def expected(a: int, r: int, k: int) -> str:
    """The rule in words (docs/store.md): pending until k decisive reviews, then unanimous or disputed."""
    if a + r < k:
        return "pending"
    return "accepted" if r == 0 else "rejected" if a == 0 else "disputed"


def test_python_rule_is_the_documented_one():
    assert {derive_status(a, r, k) for a, r, k in COMBOS} == set(STATUSES)
    assert all(derive_status(a, r, k) == expected(a, r, k) for a, r, k in COMBOS)


def test_sql_expression_agrees_with_python_on_every_combination(store_db):
    with store_db.Session() as s:
        for a, r, k in COMBOS:
            got = s.scalar(select(status_sql(literal(a), literal(r), k)))
            assert got == derive_status(a, r, k), (store_db.kind, a, r, k, got)


def test_set_overlap_rederives_stored_rows_as_python_would(store_db):
    """Real review_state rows given each count pair, then `set_overlap(k)` for each k."""
    pairs = list(itertools.product(COUNTS, COUNTS))
    with store_db.Session() as s:
        pids = list(s.scalars(select(ReviewState.puzzle_id).order_by(ReviewState.puzzle_id)))
        assert pids, "the store holds no puzzles"
        for start in range(0, len(pairs), len(pids)):
            batch = dict(zip(pids, pairs[start:start + len(pids)]))
            for pid, (a, r) in batch.items():
                s.execute(update(ReviewState).where(ReviewState.puzzle_id == pid)
                          .values(n_accept=a, n_reviews=a + r, status="pending"))
            s.commit()
            for k in KS:
                set_overlap(s, k)
                s.commit()
                got = dict(s.execute(select(ReviewState.puzzle_id, ReviewState.status)
                                     .where(ReviewState.puzzle_id.in_(batch))).all())
                want = {pid: derive_status(a, r, k) for pid, (a, r) in batch.items()}
                assert got == want, (store_db.kind, k)

"""The next-puzzle rule, written once: the specification every path is tested against.

Inputs: `k` (the team setting `review.overlap_k`, default 1), each puzzle's decisive review count
(accept + reject, `review_state.n_reviews`), which curators have judged which puzzles (any verdict;
a skip counts as judged for that curator but not toward k), the leases, a curator `u` and a time `t`.
A lease is *live* while `expires_at > t`.

1. Mine first. If `u` holds a live lease on a puzzle `u` has not judged, `u` gets it again (the
   earliest started one) and the lease is extended to `t + lease_s`.
2. Otherwise `u`'s expired leases are dropped, and `u` gets the first puzzle, in the order
   (n_reviews from k-1 down to 0, then puzzle id ascending), that `u` has not judged and that has
   room: `n_reviews + live leases < k`. It is leased to `u` until `t + lease_s`. Puzzles closest to
   k come first, so overlapping reviews complete before new puzzles are opened.
3. Nothing qualifies: None.

*Peek* ("which puzzle will `u` get after judging `current`?", for the curate page to prefetch) is
the same rule, read-only, with `current` counted as judged by `u`.

Where it runs: `reference_next` below is the rule in plain Python (the tests' oracle). The SQLite
claim (`db.review.queue`) and `peek` (both engines) run the SQL fragments below; the PostgreSQL
claim runs the same steps in the `mvp_next_puzzle` function (migration 0002), which adds a row lock
and a re-check so two curators cannot take the last room at once. tests/test_queue_rule.py runs the
same scenarios on SQLite and PostgreSQL and compares every claim and peek with `reference_next`."""
from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime


@dataclass
class LeaseRow:
    puzzle_id: str
    user_id: int
    started_at: datetime
    expires_at: datetime


@dataclass
class QueueState:
    """Everything the rule reads."""
    k: int
    reviews: dict[str, int]                                   # puzzle id -> decisive reviews
    judged: set[tuple[str, int]] = field(default_factory=set)  # (puzzle id, user id) with any verdict
    leases: list[LeaseRow] = field(default_factory=list)


def reference_next(state: QueueState, user: int, t: datetime, exclude: str | None = None) -> str | None:
    """Steps 1-3 of the rule (without the lease writes); `exclude` is the puzzle peek counts as judged."""
    def judged(pid: str) -> bool:
        return (pid, user) in state.judged or pid == exclude

    mine = sorted((lease.started_at, lease.puzzle_id) for lease in state.leases
                  if lease.user_id == user and lease.expires_at > t and not judged(lease.puzzle_id))
    if mine:
        return mine[0][1]
    live: dict[str, int] = {}
    for lease in state.leases:
        if lease.expires_at > t:
            live[lease.puzzle_id] = live.get(lease.puzzle_id, 0) + 1
    for n in range(state.k - 1, -1, -1):
        for pid in sorted(p for p, r in state.reviews.items() if r == n):
            if not judged(pid) and n + live.get(pid, 0) < state.k:
                return pid
    return None


# ---- the rule's reads as SQL (parameters :u user, :t time, :x the puzzle counted as judged) -----

def not_judged(col: str, dialect: str) -> str:
    """`u` has no verdict on the puzzle in `col`, and it is not :x. PostgreSQL gets a scalar subquery:
    its planner turns NOT EXISTS into a merge anti join that reads all of the curator's verdicts (ms
    per call, growing with their work); the scalar form is one (puzzle_id, user_id) index probe."""
    if dialect == "postgresql":
        mine = f"(SELECT v.id FROM puzzle_verdicts v WHERE v.puzzle_id = {col} AND v.user_id = :u) IS NULL"
    else:
        mine = f"NOT EXISTS (SELECT 1 FROM puzzle_verdicts v WHERE v.puzzle_id = {col} AND v.user_id = :u)"
    return f"{col} <> :x AND {mine}"


def mine_sql(dialect: str, what: str = "l.puzzle_id") -> str:
    """Step 1: my earliest live lease on a puzzle I have not judged."""
    return (f"SELECT {what} FROM leases l WHERE l.user_id = :u AND l.expires_at > :t "
            f"AND {not_judged('l.puzzle_id', dialect)} ORDER BY l.started_at LIMIT 1")


def candidate_sql(dialect: str) -> str:
    """Step 2 for one n (:n decisive reviews, :room = k - n): the first puzzle I may take."""
    return (f"SELECT rs.puzzle_id FROM review_state rs WHERE rs.n_reviews = :n "
            f"AND {not_judged('rs.puzzle_id', dialect)} "
            f"AND (SELECT count(*) FROM leases l WHERE l.puzzle_id = rs.puzzle_id AND l.expires_at > :t) < :room "
            f"ORDER BY rs.puzzle_id LIMIT 1")

"""The review queue: which puzzle a curator gets next, under expiring leases.

Each public function is one short transaction and commits (through `db.txn.run_txn`, which retries the
transient errors of concurrent writers). Verdicts and undo are in `db.review.verdicts`, statistics in
`db.review.stats`; `db.review` exposes all three.

The rule `next_puzzle` applies and `peek_next` computes read-only is specified once, in
`db.review.queue_rule` (a docstring, a reference function and the SQL fragments both use)."""
from __future__ import annotations

import functools
import json
from datetime import datetime, timedelta, timezone

from sqlalchemy import bindparam, case, delete, exists, func, insert, literal, select, text, update
from sqlalchemy.orm import Session

from db.models import Puzzle, utcnow
from db.models.curation import Lease, PuzzleVerdict, ReviewState
from db.puzzles.audit_results import summary_of
from db.settings import get_setting, put_setting
from db.review.queue_rule import (
    NO_FILTER,
    SKIPPED,
    LeaseRow,
    PuzzleFacts,
    QueueFilter,
    QueueState,
    candidate_sql,
    mine_sql,
    skipped_sql,
    steps_that_can_match,
)
from db.txn import run_txn
from mvp_core.errors import UserError

DEFAULT_LEASE_S = 600.0
OVERLAP_KEY = "review.overlap_k"


def aware(dt: datetime | None) -> datetime | None:
    """SQLite hands back naive datetimes (stored as UTC); PostgreSQL aware ones."""
    return dt.replace(tzinfo=timezone.utc) if dt is not None and dt.tzinfo is None else dt


# The review-status rule, once: pending until k decisive reviews; then accepted/rejected if unanimous,
# else disputed. The first test that holds gives the status. Each test is written with operators that
# mean the same on Python ints and on SQLAlchemy columns, so `derive_status` (one verdict) and
# `status_sql` (every row in one UPDATE, when k changes) evaluate the same rule
# (tests/test_review_status_rule.py checks both engines against Python on every combination).
STATUS_RULE = (
    ("pending", lambda n_accept, n_reject, k: n_accept + n_reject < k),
    ("accepted", lambda n_accept, n_reject, k: n_reject == 0),
    ("rejected", lambda n_accept, n_reject, k: n_accept == 0),
)
OTHERWISE = "disputed"


def derive_status(n_accept: int, n_reject: int, k: int) -> str:
    """The status of a puzzle with these counts of decisive reviews under overlap k (STATUS_RULE)."""
    return next((status for status, holds in STATUS_RULE if holds(n_accept, n_reject, k)), OTHERWISE)


def status_sql(n_accept, n_reject, k):
    """STATUS_RULE as one SQL CASE over column expressions (n_accept, n_reject) and k."""
    return case(*[(holds(n_accept, n_reject, k), status) for status, holds in STATUS_RULE], else_=OTHERWISE)


# ---- settings ---------------------------------------------------------------------------------

def overlap_k(session: Session) -> int:
    return int(get_setting(session, OVERLAP_KEY, 1))


def set_overlap(session: Session, k: int) -> None:
    """Set how many decisive reviews each puzzle needs, and re-derive every puzzle's status."""
    if not isinstance(k, int) or k < 1 or k > 50:
        raise UserError("overlap k must be an integer between 1 and 50")

    put_setting(session, OVERLAP_KEY, k, then=lambda: _refresh_all_statuses(session, k))


def _refresh_all_statuses(session: Session, k: int) -> None:
    rs = ReviewState
    session.execute(update(rs).values(status=status_sql(rs.n_accept, rs.n_reviews - rs.n_accept, k)))


# ---- queue ------------------------------------------------------------------------------------

def sync_queue(session: Session) -> int:
    """Add review_state rows for puzzles that lack one (a database made without the trigger, or rows
    inserted with the trigger disabled). Returns how many were added; the caller commits.

    Every claim that finds nothing calls this (a curator at the end of a filtered queue, each time),
    so the anti-join over every puzzle (~90 ms at 100k on SQLite) only runs when two counts say a
    row is missing (~2.5 ms SQLite, ~18 ms PostgreSQL at 100k; docs/BENCHMARKS.md)."""
    n_puzzles = select(func.count()).select_from(Puzzle).scalar_subquery()
    n_queued = select(func.count()).select_from(ReviewState).scalar_subquery()
    if session.execute(select(n_puzzles - n_queued)).scalar() == 0:
        return 0
    missing = select(Puzzle.id, literal(0), literal(0), literal("pending"), summary_of(Puzzle.id)).where(
        ~exists().where(ReviewState.puzzle_id == Puzzle.id))
    # RETURNING, not rowcount: psycopg reports -1 for an INSERT ... SELECT here
    return len(session.execute(insert(ReviewState).from_select(
        ["puzzle_id", "n_reviews", "n_accept", "status", "audit_shortcuts"], missing)
        .returning(ReviewState.puzzle_id)).all())


def next_puzzle(session: Session, user_id: int, lease_s: float = DEFAULT_LEASE_S,
                now: datetime | None = None, filt: QueueFilter = NO_FILTER) -> str | None:
    """The id of the next puzzle for this curator (leased to them until now + lease_s), or None when
    nothing is left for them (under `filt`, if given). Calling it again before judging returns the
    same puzzle.

    Speed: the queue query is an index range scan (~0.1 ms); the cost was round trips. On PostgreSQL
    the whole claim is one call of the `mvp_next_puzzle` function (migration 0006: lock with FOR UPDATE
    SKIP LOCKED, re-check the room with a fresh snapshot, lease). On SQLite it is one BEGIN IMMEDIATE
    transaction of a few in-process statements (UPDATE ... RETURNING, INSERT ... SELECT ... RETURNING)."""
    if lease_s <= 0:
        raise UserError("lease_s must be positive")
    claim = _claim_pg if session.bind.dialect.name == "postgresql" else _claim_sqlite

    def txn():
        t = now or utcnow()
        until = t + timedelta(seconds=lease_s)
        pid = claim(session, user_id, t, until, filt)
        if pid is None and sync_queue(session):   # puzzles added without the trigger: queue them, retry
            pid = claim(session, user_id, t, until, filt)
        return pid
    return run_txn(session, txn)


_PG_CLAIM = text("SELECT mvp_next_puzzle(:u, :t, :until, :fv, :fs, :fk, :fmin, :fmax)")


def _claim_pg(session: Session, user_id: int, t: datetime, until: datetime, filt: QueueFilter) -> str | None:
    return session.execute(_PG_CLAIM, {"u": user_id, "t": t, "until": until, **filt.params()}).scalar()


def shape(f: QueueFilter) -> QueueFilter:
    """The parts of a filter the SQL text depends on (which are set), for caching statements."""
    return QueueFilter(video=None if f.video is None else "",
                       status=None if f.status is None else (SKIPPED if f.status == SKIPPED else ""),
                       kind=None if f.kind is None else "",
                       min_difficulty=None if f.min_difficulty is None else 0.0,
                       max_difficulty=None if f.max_difficulty is None else 0.0)


# The SQLite claim runs on the raw DBAPI cursor: on a loaded 2-core machine building and compiling
# Core statements cost more CPU than the queries themselves. The reads are the rule's own SQL.
_SQLITE_FORGET = "DELETE FROM leases WHERE user_id = :u AND expires_at <= :t"
_SQLITE_K = "SELECT value FROM settings WHERE key = :key"


@functools.cache
def _sqlite_statements(f: QueueFilter) -> tuple[str, str, str]:
    take = "INSERT INTO leases (puzzle_id, user_id, started_at, expires_at) SELECT c.puzzle_id, :u, :t, :until FROM ({}) c RETURNING puzzle_id"
    return (f"UPDATE leases SET expires_at = :until WHERE id = ({mine_sql(f, 'l.id')}) RETURNING puzzle_id",
            take.format(candidate_sql(f)), take.format(skipped_sql(f)))


def _claim_sqlite(session: Session, user_id: int, t: datetime, until: datetime, filt: QueueFilter) -> str | None:
    """The steps of `mvp_next_puzzle` (migration 0006) as statements in one BEGIN IMMEDIATE
    transaction: no other writer runs between our reads and our write, so no lock or re-check."""
    session.flush()
    conn = session.connection()   # begins the transaction (BEGIN IMMEDIATE, see db.engine)
    to_db = Lease.expires_at.type.dialect_impl(conn.dialect).bind_processor(conn.dialect)
    p = {"u": user_id, "t": to_db(t), "until": to_db(until), "x": "", **filt.params()}
    mine, take, take_skipped = _sqlite_statements(shape(filt))
    cur = conn.connection.dbapi_connection.cursor()
    try:
        # 1. A live lease of mine on a puzzle I have not decided yet: hand it out again, extended.
        row = cur.execute(mine, p).fetchone()
        if row is not None:
            return row[0]
        # 2. Forget my expired leases (their puzzles went back to the queue when they expired: live
        # counts only look at unexpired leases), so re-leasing one of them cannot hit the unique key.
        cur.execute(_SQLITE_FORGET, p)
        row = cur.execute(_SQLITE_K, {"key": OVERLAP_KEY}).fetchone()
        # a JSON column has NUMERIC affinity in SQLite: a stored number comes back as a number
        k = 1 if row is None else int(json.loads(row[0]) if isinstance(row[0], str) else row[0])
        fresh, skipped = steps_that_can_match(filt)
        # 3. Puzzles closest to k first: one index range scan (n_reviews = n, by id) per n.
        for n in range(k - 1, -1, -1) if fresh else ():
            row = cur.execute(take, {**p, "n": n, "room": k - n}).fetchone()
            if row is not None:
                return row[0]
        # 4. Then the puzzles I skipped, longest ago first.
        row = cur.execute(take_skipped, {**p, "k": k}).fetchone() if skipped else None
        return None if row is None else row[0]
    finally:
        cur.close()


def peek_next(session: Session, user_id: int, exclude: str | None = None,
              now: datetime | None = None, filt: QueueFilter = NO_FILTER) -> str | None:
    """The puzzle `next_puzzle` will hand this curator once they have judged `exclude` (their current
    puzzle), computed read-only from the same rule; None when nothing would be left. Concurrent
    curators can still take it first: it is a prediction for prefetching, not a reservation."""
    mine, take, take_skipped = _peek_statements(shape(filt))
    p = {"u": user_id, "t": now or utcnow(), "x": exclude or "", **filt.params()}
    pid = session.execute(mine, p).scalar()
    if pid is not None:
        return pid
    k = overlap_k(session)
    fresh, skipped = steps_that_can_match(filt)
    for n in range(k - 1, -1, -1) if fresh else ():
        pid = session.execute(take, {**p, "n": n, "room": k - n}).scalar()
        if pid is not None:
            return pid
    return session.execute(take_skipped, {**p, "k": k}).scalar() if skipped else None


@functools.cache
def _peek_statements(f: QueueFilter):
    # :t bound as the lease column's type, so SQLite compares it in the stored text format
    def stmt(sql: str):
        return text(sql).bindparams(bindparam("t", type_=Lease.expires_at.type))
    return stmt(mine_sql(f)), stmt(candidate_sql(f)), stmt(skipped_sql(f))


def read_state(session: Session) -> QueueState:
    """The database's queue state as the rule reads it (for checking the store against the rule)."""
    from db.models import Option
    verdicts = session.execute(select(PuzzleVerdict.puzzle_id, PuzzleVerdict.user_id, PuzzleVerdict.verdict,
                                      PuzzleVerdict.created_at)).all()
    kinds: dict[str, set[str]] = {}
    hardest: dict[str, float] = {}
    for pid, kind, d in session.execute(select(Option.puzzle_id, Option.kind, Option.difficulty)):
        kinds.setdefault(pid, set()).add(kind)
        if kind != "target":
            hardest[pid] = max(hardest.get(pid, d), d)
    facts = {pid: PuzzleFacts(video, frozenset(kinds.get(pid, ())), hardest.get(pid))
             for pid, video in session.execute(select(Puzzle.id, Puzzle.video_id))}
    return QueueState(
        k=overlap_k(session),
        reviews=dict(session.execute(select(ReviewState.puzzle_id, ReviewState.n_reviews)).all()),
        judged={(p, u) for p, u, _, _ in verdicts},
        leases=[LeaseRow(p, u, aware(s), aware(e)) for p, u, s, e in session.execute(
            select(Lease.puzzle_id, Lease.user_id, Lease.started_at, Lease.expires_at))],
        skipped={(p, u): aware(at) for p, u, v, at in verdicts if v == "skip"},
        status=dict(session.execute(select(ReviewState.puzzle_id, ReviewState.status)).all()),
        facts=facts)


def release(session: Session, user_id: int, puzzle_id: str) -> None:
    """Give a leased puzzle back without a verdict (e.g. the curator closed the page)."""
    run_txn(session, lambda: session.execute(
        delete(Lease).where(Lease.user_id == user_id, Lease.puzzle_id == puzzle_id)))

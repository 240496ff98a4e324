"""The next-puzzle rule, written once: the specification every path is tested against.

Inputs: `k` (the team setting `review.overlap_k`, default 1), each puzzle's decisive review count
(accept + reject, `review_state.n_reviews`), each curator's verdicts (a skip is a verdict row, but
not a decision: it does not count toward k and the puzzle comes back later), the leases, a curator
`u`, a time `t` and an optional *filter* (below). A lease is *live* while `expires_at > t`. A puzzle
has *room* while `n_reviews + live leases < k`. `u` has *decided* a puzzle when their verdict on it
is accept or reject.

1. Mine first. If `u` holds a live lease on a puzzle `u` has not decided that matches the filter,
   `u` gets it again (the earliest started one) and the lease is extended to `t + lease_s`.
2. Otherwise `u`'s expired leases are dropped, and `u` gets the first puzzle, in the order
   (n_reviews from k-1 down to 0, then puzzle id ascending), that `u` has no verdict on, that has
   room and matches the filter. Puzzles closest to k come first, so overlapping reviews complete
   before new puzzles are opened.
3. Otherwise the puzzles `u` skipped come back: the first, in the order (time of the skip, then
   puzzle id), that has room and matches the filter. A skip again moves it to the end.
   Whichever step 2 or 3 picks is leased to `u` until `t + lease_s`.
4. Nothing qualifies: None.

The filter (`QueueFilter`, all parts optional, all must hold): the puzzle's video; its review
status (pending / accepted / rejected / disputed; only pending puzzles ever have room, so the
others empty the queue and are for the list), or `skipped` (the ones `u` skipped); a distractor
kind some option has; bounds on the difficulty of its hardest distractor. The curate page's list
and per-video view (`db.review.browse`) use the same filter.

*Peek* ("which puzzle will `u` get after judging `current`?", for the curate page to prefetch) is
the same rule, read-only, with `current` counted as decided by `u`. (Were `current` skipped and
nothing else left, the claim hands `current` back while the peek says None.)

Where it runs: `reference_next` below is the rule in plain Python (the tests' oracle). The SQLite
claim (`db.review.queue`) and `peek` (both engines) run the SQL fragments below; the PostgreSQL
claim runs the same steps in the `mvp_next_puzzle` function (migration 0006), which adds a row lock
and a re-check so two curators cannot take the last room at once. tests/test_queue_rule.py runs the
same scenarios on SQLite and PostgreSQL and compares every claim and peek with `reference_next`."""
from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime

from db.models.curation import STATUSES

SKIPPED = "skipped"                       # the status filter's extra value: puzzles `u` skipped
FILTER_STATUSES = STATUSES + (SKIPPED,)


@dataclass
class LeaseRow:
    puzzle_id: str
    user_id: int
    started_at: datetime
    expires_at: datetime


@dataclass(frozen=True)
class QueueFilter:
    """Which puzzles the queue may hand out (None: any)."""
    video: str | None = None
    status: str | None = None
    kind: str | None = None
    min_difficulty: float | None = None
    max_difficulty: float | None = None

    def params(self) -> dict:
        """The SQL parameters `filter_sql` names."""
        return {"fv": self.video, "fs": self.status, "fk": self.kind,
                "fmin": self.min_difficulty, "fmax": self.max_difficulty}


NO_FILTER = QueueFilter()


@dataclass(frozen=True)
class PuzzleFacts:
    """What the filter reads of a puzzle."""
    video: str
    kinds: frozenset[str]           # every option's kind
    hardest: float | None           # the hardest distractor's difficulty (None: no distractor)


@dataclass
class QueueState:
    """Everything the rule reads."""
    k: int
    reviews: dict[str, int]                                   # puzzle id -> decisive reviews
    judged: set[tuple[str, int]] = field(default_factory=set)  # (puzzle id, user id) with any verdict
    leases: list[LeaseRow] = field(default_factory=list)
    skipped: dict[tuple[str, int], datetime] = field(default_factory=dict)   # the skips among `judged`, when
    status: dict[str, str] = field(default_factory=dict)      # puzzle id -> review status (default pending)
    facts: dict[str, PuzzleFacts] = field(default_factory=dict)   # needed only with a filter


def reference_matches(state: QueueState, pid: str, user: int, f: QueueFilter) -> bool:
    """The filter on one puzzle."""
    if f.status == SKIPPED and (pid, user) not in state.skipped:
        return False
    if f.status not in (None, SKIPPED) and state.status.get(pid, "pending") != f.status:
        return False
    if f.video is None and f.kind is None and f.min_difficulty is None and f.max_difficulty is None:
        return True
    facts = state.facts[pid]
    if (f.video is not None and facts.video != f.video) or (f.kind is not None and f.kind not in facts.kinds):
        return False
    if f.min_difficulty is not None and (facts.hardest is None or facts.hardest < f.min_difficulty):
        return False
    return not (f.max_difficulty is not None and (facts.hardest is None or facts.hardest > f.max_difficulty))


def reference_next(state: QueueState, user: int, t: datetime, exclude: str | None = None,
                   filt: QueueFilter = NO_FILTER) -> str | None:
    """Steps 1-4 of the rule (without the lease writes); `exclude` is the puzzle peek counts as decided."""
    def ok(pid: str) -> bool:
        return pid != exclude and reference_matches(state, pid, user, filt)

    def decided(pid: str) -> bool:
        return (pid, user) in state.judged and (pid, user) not in state.skipped

    mine = sorted((lease.started_at, lease.puzzle_id) for lease in state.leases
                  if lease.user_id == user and lease.expires_at > t and not decided(lease.puzzle_id)
                  and ok(lease.puzzle_id))
    if mine:
        return mine[0][1]
    live: dict[str, int] = {}
    for lease in state.leases:
        if lease.expires_at > t:
            live[lease.puzzle_id] = live.get(lease.puzzle_id, 0) + 1

    def room(pid: str) -> bool:
        return state.reviews.get(pid, 0) + live.get(pid, 0) < state.k
    for n in range(state.k - 1, -1, -1):
        for pid in sorted(p for p, r in state.reviews.items() if r == n):
            if (pid, user) not in state.judged and room(pid) and ok(pid):
                return pid
    skips = sorted((at, pid) for (pid, u), at in state.skipped.items() if u == user)
    for _, pid in skips:
        if pid in state.reviews and room(pid) and ok(pid):
            return pid
    return None


# ---- the rule's reads as SQL (parameters :u user, :t time, :x the puzzle counted as decided, and
# the filter's :fv video, :fs status, :fk kind, :fmin / :fmax difficulty) -------------------------
# "Not judged" and "not decided" are scalar subqueries, not NOT EXISTS: PostgreSQL's planner turns
# NOT EXISTS into a merge anti join that reads all of the curator's verdicts (ms per call, growing
# with their work); the scalar form is one (puzzle_id, user_id) index probe on both engines.

def _my_verdict(col: str) -> str:
    return f"(SELECT mv.verdict FROM puzzle_verdicts mv WHERE mv.puzzle_id = {col} AND mv.user_id = :u)"


def hardest_sql(col: str) -> str:
    """The difficulty of the hardest distractor of the puzzle in `col` (NULL: no distractor)."""
    return f"(SELECT max(fd.difficulty) FROM options fd WHERE fd.puzzle_id = {col} AND fd.kind <> 'target')"


def filter_sql(f: QueueFilter, col: str, video: bool = True) -> str:
    """` AND ...` for each part of the filter that is set, on the puzzle in `col` (empty: no filter);
    `video=False` leaves the video out (a caller that joins the puzzles by video itself)."""
    parts = []
    if f.video is not None and video:
        parts.append(f"{col} IN (SELECT fp.id FROM puzzles fp WHERE fp.video_id = :fv)")
    if f.status == SKIPPED:
        parts.append(f"{_my_verdict(col)} = 'skip'")
    elif f.status is not None:
        parts.append(f"(SELECT frs.status FROM review_state frs WHERE frs.puzzle_id = {col}) = :fs")
    if f.kind is not None:
        parts.append(f"EXISTS (SELECT 1 FROM options fo WHERE fo.puzzle_id = {col} AND fo.kind = :fk)")
    if f.min_difficulty is not None:
        parts.append(f"{hardest_sql(col)} >= :fmin")
    if f.max_difficulty is not None:
        parts.append(f"{hardest_sql(col)} <= :fmax")
    return "".join(f" AND {p}" for p in parts)


def steps_that_can_match(f: QueueFilter) -> tuple[bool, bool]:
    """(step 2, step 3): whether they can give anything under `f`, so a claim runs only those. Step 2
    wants no verdict of mine, so never a puzzle I skipped; only pending puzzles have room (a status
    is pending exactly while n_reviews < k), so a decided status leaves step 1 alone."""
    return f.status in (None, "pending"), f.status in (None, "pending", SKIPPED)


def _live(col: str) -> str:
    return f"(SELECT count(*) FROM leases l WHERE l.puzzle_id = {col} AND l.expires_at > :t)"


def mine_sql(f: QueueFilter = NO_FILTER, what: str = "l.puzzle_id") -> str:
    """Step 1: my earliest live lease on a puzzle I have not decided."""
    return (f"SELECT {what} FROM leases l WHERE l.user_id = :u AND l.expires_at > :t AND l.puzzle_id <> :x "
            f"AND coalesce({_my_verdict('l.puzzle_id')}, 'skip') = 'skip'{filter_sql(f, 'l.puzzle_id')} "
            f"ORDER BY l.started_at LIMIT 1")


def candidate_sql(f: QueueFilter = NO_FILTER) -> str:
    """Step 2 for one n (:n decisive reviews, :room = k - n): the first puzzle I may take. With a
    video, the scan starts from that video's puzzles (the puzzles' video index), not the whole queue."""
    src, on = "review_state rs", ""
    if f.video is not None:     # CROSS JOIN: SQLite keeps this join order; PostgreSQL plans it freely
        src, on = "puzzles fp CROSS JOIN review_state rs", "fp.video_id = :fv AND rs.puzzle_id = fp.id AND "
    return (f"SELECT rs.puzzle_id FROM {src} WHERE {on}rs.n_reviews = :n AND rs.puzzle_id <> :x "
            f"AND {_my_verdict('rs.puzzle_id')} IS NULL AND {_live('rs.puzzle_id')} < :room"
            f"{filter_sql(f, 'rs.puzzle_id', video=False)} ORDER BY rs.puzzle_id LIMIT 1")


def skipped_sql(f: QueueFilter = NO_FILTER) -> str:
    """Step 3 (:k): the puzzle I skipped longest ago that has room."""
    return (f"SELECT sv.puzzle_id FROM puzzle_verdicts sv JOIN review_state rs ON rs.puzzle_id = sv.puzzle_id "
            f"WHERE sv.user_id = :u AND sv.verdict = 'skip' AND sv.puzzle_id <> :x "
            f"AND rs.n_reviews + {_live('sv.puzzle_id')} < :k{filter_sql(f, 'sv.puzzle_id')} "
            f"ORDER BY sv.created_at, sv.puzzle_id LIMIT 1")

"""The next-puzzle rule (db/review/queue_rule.py) against the store on SQLite and PostgreSQL: the
same seeded scenarios (k = 1 and k = 3; four curators claiming, judging, skipping, releasing,
changing their queue filter, and leases expiring as time moves on) run on both engines, and every
claim (`next_puzzle`) and every peek (`peek_next`) must equal the rule's reference function on the
database's state at that moment. A peek must also be what the curator actually gets right after
judging their current puzzle. Skipped puzzles come back after everything else, oldest skip first."""
from __future__ import annotations

import random
from datetime import timedelta

import pytest

from db import review
from db.models import utcnow
from db.models.curation import User
from db.review.queue_rule import NO_FILTER, SKIPPED, LeaseRow, PuzzleFacts, QueueFilter, QueueState, reference_next

LEASE_S = 30.0


def _filters(records: list[dict]) -> list[QueueFilter]:
    """The filters a curator switches between: none, by video, by status, by kind, by difficulty."""
    videos = sorted({r["video"]["id"] for r in records})
    kinds = sorted({o["kind"] for r in records for o in r["options"] if o["kind"] != "target"})
    hardest = sorted(max(o["difficulty"] for o in r["options"] if o["kind"] != "target") for r in records)
    mid = hardest[len(hardest) // 2]
    return [NO_FILTER, NO_FILTER, QueueFilter(video=videos[0]), QueueFilter(status=SKIPPED),
            QueueFilter(status="pending", kind=kinds[0]), QueueFilter(min_difficulty=mid),
            QueueFilter(video=videos[-1], max_difficulty=mid), QueueFilter(status="accepted")]


def _check_peeks(s, users, current, filt, t):
    state = review.read_state(s)
    for u in users:
        f = filt.get(u, NO_FILTER)
        assert review.peek_next(s, u, current.get(u), now=t, filt=f) == \
            reference_next(state, u, t, exclude=current.get(u), filt=f)


def _step(s, rng, users, current, filt, filters, t, log):
    u = rng.choice(users)
    action = rng.choices(["next", "judge", "release", "wait", "filter"], weights=[4, 4, 1, 2, 1])[0]
    if action == "wait":
        return t + timedelta(seconds=rng.uniform(5, 40))
    if action == "filter":
        filt[u] = rng.choice(filters)
        if current.get(u):
            review.release(s, u, current.pop(u))
        return t
    f = filt.get(u, NO_FILTER)
    if action == "release" and current.get(u):
        review.release(s, u, current.pop(u))
    elif action == "judge" and current.get(u):
        peek = review.peek_next(s, u, current[u], now=t, filt=f)
        verdict = rng.choice(["accept", "reject", "skip"])
        pid = current.pop(u)
        review.submit_verdict(s, u, pid, verdict)
        got = review.next_puzzle(s, u, lease_s=LEASE_S, now=t, filt=f)
        # peek counts the shown puzzle as decided; a skipped one comes back only when nothing else is left
        assert got == peek or (verdict == "skip" and peek is None and got == pid), \
            "peek said one puzzle, the claim right after the verdict gave another"
        current[u] = got
        log.append(("judge", u, pid, verdict))
        log.append(("next", u, got, None))
    else:
        expected = reference_next(review.read_state(s), u, t, filt=f)
        got = review.next_puzzle(s, u, lease_s=LEASE_S, now=t, filt=f)
        assert got == expected
        current[u] = got
        log.append(("next", u, got, None))
    return t


def _users(s, n: int = 4) -> list[int]:
    # rows, not db.users.accounts.add_user: argon2 hashes would cost more than the whole scenario
    rows = [User(name=f"c{i}", role="curator", password_hash="-") for i in range(n)]
    s.add_all(rows)
    s.commit()
    return [r.id for r in rows]


def _came_back(log) -> int:
    """How many times a curator was handed a puzzle they had skipped."""
    skipped, n = set(), 0
    for a, u, pid, v in log:
        if a == "judge" and v == "skip":
            skipped.add((u, pid))
        n += a == "next" and (u, pid) in skipped
    return n


@pytest.mark.parametrize("k", [1, 3])
def test_claims_and_peeks_follow_the_rule(store_db, k):
    rng = random.Random(k)
    filters = _filters(store_db.records)
    with store_db.Session() as s:
        users = _users(s)
        review.set_overlap(s, k)
        t, current, filt, log = utcnow(), {}, {}, []
        # at least 110 steps, then on until a skipped puzzle has come back: the puzzles' ids (so the
        # queue's order, so how soon the unskipped ones run out) differ between synth runs
        for i in range(600):
            t = _step(s, rng, users, current, filt, filters, t, log)
            _check_peeks(s, users, current, filt, t)
            if i >= 110 and _came_back(log):
                break
        handed = {pid for _, _, pid, _ in log if pid}
        # the scenario did exercise the rule: many puzzles handed out, overlapping reviews at k=3,
        # and skipped puzzles handed out again
        assert len(handed) >= min(len(store_db.records), 8)
        assert _came_back(log), "no skipped puzzle was handed out again"
        if k == 3:
            state = review.read_state(s)
            assert max(state.reviews.values()) >= 2


def test_skipped_puzzles_come_back_at_the_end(store_db):
    """One curator skips two puzzles, decides everything else, then gets the skipped ones back, the
    oldest skip first; skipping one again sends it behind the other."""
    n = len(store_db.records)
    assert n >= 4
    with store_db.Session() as s:
        (u,) = _users(s, 1)
        first = review.next_puzzle(s, u)
        review.submit_verdict(s, u, first, "skip")
        second = review.next_puzzle(s, u)
        review.submit_verdict(s, u, second, "skip")
        decided = []
        while True:
            pid = review.next_puzzle(s, u)
            assert pid == reference_next(review.read_state(s), u, utcnow())
            if pid in (first, second):
                break
            review.submit_verdict(s, u, pid, "accept")
            decided.append(pid)
        assert len(decided) == n - 2, "a skipped puzzle came back before the queue was empty"
        assert pid == first
        assert review.peek_next(s, u, first) == second
        review.submit_verdict(s, u, first, "skip")          # skipped again: now behind `second`
        assert review.next_puzzle(s, u) == second
        assert review.next_puzzle(s, u) == second           # the same puzzle until judged
        review.submit_verdict(s, u, second, "reject")
        assert review.next_puzzle(s, u) == first
        assert review.next_puzzle(s, u, filt=QueueFilter(status=SKIPPED)) == first
        review.submit_verdict(s, u, first, "accept")
        assert review.next_puzzle(s, u) is None
        assert review.peek_next(s, u) is None


def test_reference_rule_on_a_hand_made_state():
    """The specification itself, on a state small enough to check by eye."""
    t = utcnow()
    live, dead = t + timedelta(seconds=10), t - timedelta(seconds=1)
    state = QueueState(k=3, reviews={"p1": 0, "p2": 1, "p3": 2, "p4": 2},
                       judged={("p3", 1)},
                       leases=[LeaseRow("p4", 2, t, live), LeaseRow("p4", 3, t, dead)])
    # closest to k first (n=2: p3 judged by me, p4 has one live lease: 2 + 1 = 3, no room) -> n=1
    assert reference_next(state, 1, t) == "p2"
    # the curator holding p4 gets it again; with p4 counted as judged, peek moves on to p3
    assert reference_next(state, 2, t) == "p4"
    assert reference_next(state, 2, t, exclude="p4") == "p3"
    # the expired lease counts for nothing: once user 2's lease expires too, p4 has room again
    assert reference_next(state, 1, t + timedelta(seconds=11)) == "p4"
    assert reference_next(QueueState(k=1, reviews={"p1": 1}), 1, t) is None
    # skips: p5 (skipped by 1 before p6) and p6 come back only after p2, the one never seen
    skips = QueueState(k=1, reviews={"p2": 0, "p5": 0, "p6": 0}, judged={("p5", 1), ("p6", 1)},
                       skipped={("p6", 1): t, ("p5", 1): t - timedelta(seconds=5)})
    assert reference_next(skips, 1, t) == "p2"
    assert reference_next(skips, 1, t, exclude="p2") == "p5"
    assert reference_next(skips, 2, t, exclude="p2") == "p5"              # another curator: no skips of theirs
    assert reference_next(skips, 1, t, exclude="p2", filt=QueueFilter(status=SKIPPED)) == "p5"
    facts = {"p2": PuzzleFacts("v1", frozenset({"target", "neighbor"}), 0.5),
             "p5": PuzzleFacts("v2", frozenset({"target", "random"}), 0.9),
             "p6": PuzzleFacts("v2", frozenset({"target", "neighbor"}), 0.7)}
    skips.facts = facts
    assert reference_next(skips, 1, t, filt=QueueFilter(video="v2")) == "p5"
    assert reference_next(skips, 1, t, filt=QueueFilter(kind="neighbor", min_difficulty=0.6)) == "p6"
    assert reference_next(skips, 1, t, filt=QueueFilter(max_difficulty=0.4)) is None

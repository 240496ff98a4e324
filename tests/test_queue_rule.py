"""The next-puzzle rule (db/review/queue_rule.py) against the store on SQLite and PostgreSQL: the
same seeded scenarios (k = 1 and k = 3; four curators claiming, judging, skipping, releasing, and
leases expiring as time moves on) run on both engines, and every claim (`next_puzzle`) and every
peek (`peek_next`) must equal the rule's reference function on the database's state at that moment.
A peek must also be what the curator actually gets right after judging their current puzzle."""
from __future__ import annotations

import random
from datetime import timedelta

import pytest

from db import review
from db.models import utcnow
from db.models.curation import User
from db.review.queue_rule import LeaseRow, QueueState, reference_next

LEASE_S = 30.0


def _check_peeks(s, users, current, t):
    state = review.read_state(s)
    for u in users:
        assert review.peek_next(s, u, current.get(u), now=t) == reference_next(state, u, t, exclude=current.get(u))


def _step(s, rng, users, current, t, log):
    u = rng.choice(users)
    action = rng.choices(["next", "judge", "release", "wait"], weights=[4, 4, 1, 2])[0]
    if action == "wait":
        return t + timedelta(seconds=rng.uniform(5, 40))
    if action == "release" and current.get(u):
        review.release(s, u, current.pop(u))
    elif action == "judge" and current.get(u):
        peek = review.peek_next(s, u, current[u], now=t)
        review.submit_verdict(s, u, current.pop(u), rng.choice(["accept", "reject", "skip"]))
        got = review.next_puzzle(s, u, lease_s=LEASE_S, now=t)
        assert got == peek, "peek said one puzzle, the claim right after the verdict gave another"
        current[u] = got
        log.append(("judge+next", u, got))
    else:
        expected = reference_next(review.read_state(s), u, t)
        got = review.next_puzzle(s, u, lease_s=LEASE_S, now=t)
        assert got == expected
        current[u] = got
        log.append(("next", u, got))
    return t


@pytest.mark.parametrize("k", [1, 3])
def test_claims_and_peeks_follow_the_rule(store_db, k):
    rng = random.Random(k)
    with store_db.Session() as s:
        # rows, not db.users.add_user: four argon2 hashes would cost more than the whole scenario
        rows = [User(name=f"c{i}", role="curator", password_hash="-") for i in range(4)]
        s.add_all(rows)
        s.commit()
        users = [r.id for r in rows]
        review.set_overlap(s, k)
        t, current, log = utcnow(), {}, []
        for _ in range(70):
            t = _step(s, rng, users, current, t, log)
            _check_peeks(s, users, current, t)
        handed = {pid for _, _, pid in log if pid}
        # the scenario did exercise the rule: many puzzles handed out, overlapping reviews at k=3
        assert len(handed) >= min(len(store_db.records), 8)
        if k == 3:
            state = review.read_state(s)
            assert max(state.reviews.values()) >= 2


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

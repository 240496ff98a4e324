"""Review workflow on both engines: queue and leases, verdicts, undo, status, progress, agreement."""
from __future__ import annotations

from datetime import timedelta

import pytest
from sqlalchemy import func, select

from db import analytics, review
from db.models import utcnow
from db.models.curation import Lease, PuzzleVerdict, VerdictEvent
from db.users.accounts import add_user, authenticate, list_users
from mvp_core.errors import UserError


def _users(s, *names):
    ids = [add_user(s, n, "curator", "password-" + n)[0].id for n in names]
    s.commit()
    return ids


def _distractor(rec):
    return next(o["label"] for o in rec["options"] if o["kind"] != "target")


def test_users_roles_and_passwords(store_db):
    with store_db.Session() as s:
        u, pw = add_user(s, "ann", "admin")
        s.commit()
        assert len(pw) >= 12 and u.password_hash.startswith("$argon2id$")
        assert authenticate(s, "ann", pw) == (u.id, "ann")
        assert authenticate(s, "ann", "wrong") is None and authenticate(s, "nobody", pw) is None
        with pytest.raises(UserError, match="already exists"):
            add_user(s, "ann", "curator", "x")
        with pytest.raises(UserError, match="unknown role"):
            add_user(s, "bob", "boss", "x")
        s.rollback()
        assert [x["name"] for x in list_users(s)] == ["ann"]


def test_next_puzzle_leases_and_single_review(store_db):
    n = len(store_db.records)
    with store_db.Session() as s:
        a, b = _users(s, "a", "b")
        pa = review.next_puzzle(s, a)
        assert pa is not None
        assert review.next_puzzle(s, a) == pa          # same puzzle until judged
        pb = review.next_puzzle(s, b)
        assert pb not in (None, pa)                     # k=1: leased puzzle not handed to b
        review.submit_verdict(s, a, pa, "accept")
        assert review.puzzle_status(s, pa)["status"] == "accepted"
        seen = {pa, pb}
        for _ in range(n):                              # a drains the queue (b still holds pb)
            p = review.next_puzzle(s, a)
            if p is None:
                break
            assert p not in seen or p == pa and False
            seen.add(p)
            review.submit_verdict(s, a, p, "reject", reason="blurry")
        assert review.next_puzzle(s, a) is None
        assert len(seen) == n
        prog = review.progress(s, a)
        assert prog["total"] == n and prog["mine"]["reviewed"] == n - 1
        assert prog["everyone"]["by_status"]["pending"] == 1


def test_expired_lease_returns_to_queue(store_db):
    with store_db.Session() as s:
        a, b = _users(s, "a", "b")
        ids = sorted(r["id"] for r in store_db.records)
        t0 = utcnow()
        for p in ids[:-1]:          # everything but one is judged already
            review.submit_verdict(s, b, p, "accept")
        p = review.next_puzzle(s, a, lease_s=30, now=t0)
        assert p == ids[-1]
        assert review.next_puzzle(s, b, now=t0 + timedelta(seconds=10)) is None   # leased to a
        assert review.next_puzzle(s, b, now=t0 + timedelta(seconds=31)) == p       # lease expired
        live = select(func.count()).select_from(Lease).where(Lease.expires_at > t0 + timedelta(seconds=31))
        assert s.scalar(live.where(Lease.user_id == a)) == 0 and s.scalar(live.where(Lease.user_id == b)) == 1


def test_overlap_k_and_disputed(store_db):
    with store_db.Session() as s:
        a, b, c = _users(s, "a", "b", "c")
        review.set_overlap(s, 2)
        pa = review.next_puzzle(s, a)
        pb = review.next_puzzle(s, b)
        assert pb == pa                                   # overlap: the same puzzle goes to two curators
        pc = review.next_puzzle(s, c)
        assert pc != pa                                   # but not to a third while two hold it
        review.submit_verdict(s, a, pa, "accept")
        assert review.puzzle_status(s, pa)["status"] == "pending"   # 1 of 2 reviews
        review.submit_verdict(s, b, pa, "reject", reason="two targets look alike")
        st = review.puzzle_status(s, pa)
        assert st["status"] == "disputed" and st["n_reviews"] == 2
        review.submit_verdict(s, b, pa, "accept")         # b changes their mind
        assert review.puzzle_status(s, pa)["status"] == "accepted"
        review.set_overlap(s, 3)                          # statuses re-derived for the new k
        assert review.puzzle_status(s, pa)["status"] == "pending"
        with pytest.raises(UserError):
            review.set_overlap(s, 0)


def test_skip_does_not_count_and_is_not_offered_next(store_db):
    with store_db.Session() as s:
        a, b = _users(s, "a", "b")
        p = review.next_puzzle(s, a)
        review.submit_verdict(s, a, p, "skip", reason="unsure")
        assert review.puzzle_status(s, p)["status"] == "pending"
        assert review.next_puzzle(s, a) != p
        assert p in {review.next_puzzle(s, b)} or review.puzzle_status(s, p)["n_reviews"] == 0


def test_option_verdicts_validation_and_history(store_db):
    rec = store_db.records[0]
    target = rec["answer"][0]
    d = _distractor(rec)
    with store_db.Session() as s:
        (a,) = _users(s, "a")
        with pytest.raises(UserError, match="reason code"):
            review.set_option_verdict(s, a, rec["id"], d, "reject")
        with pytest.raises(UserError, match="target"):
            review.set_option_verdict(s, a, rec["id"], target, "reject", "ambiguous")
        with pytest.raises(UserError, match="no option"):
            review.set_option_verdict(s, a, rec["id"], "Z", "reject", "ambiguous")
        with pytest.raises(UserError, match="verdict must be"):
            review.submit_verdict(s, a, rec["id"], "maybe")
        with pytest.raises(UserError, match="no puzzle"):
            review.submit_verdict(s, a, "nope", "accept")
        review.set_option_verdict(s, a, rec["id"], d, "reject", "near_duplicate", note="same shot")
        review.submit_verdict(s, a, rec["id"], "accept", seconds=4.5)
        st = review.puzzle_status(s, rec["id"])
        assert st["rejected_options"] == {d: 1} and st["verdicts"][0]["seconds"] == 4.5
        hist = review.history(s, puzzle_id=rec["id"])
        assert [(h["label"], h["action"]) for h in hist] == [(None, "set"), (d, "set")]


def test_undo_restores_and_keeps_history(store_db):
    with store_db.Session() as s:
        a, b = _users(s, "a", "b")
        p = review.next_puzzle(s, a)
        rec = next(r for r in store_db.records if r["id"] != p)    # b's puzzle, untouched by a's undo
        review.set_option_verdict(s, a, p, _distractor(next(r for r in store_db.records if r["id"] == p)),
                                  "reject", "too_easy")
        review.submit_verdict(s, a, p, "accept")
        review.submit_verdict(s, a, p, "reject", reason="changed")
        review.submit_verdict(s, b, rec["id"], "accept")
        assert review.undo_last(s, a)["restored"]["verdict"] == "accept"
        assert review.puzzle_status(s, p)["status"] == "accepted"
        assert review.undo_last(s, a)["restored"] is None          # back to no verdict
        assert review.puzzle_status(s, p)["status"] == "pending"
        assert review.next_puzzle(s, a) == p                        # handed back to its curator
        undone = review.undo_last(s, a)                             # the option verdict
        assert undone["label"] is not None and undone["restored"] is None
        assert review.undo_last(s, a) is None
        assert review.puzzle_status(s, rec["id"])["status"] == "accepted"   # b untouched
        ev = s.scalars(select(VerdictEvent).where(VerdictEvent.user_id == a)).all()
        assert [e.action for e in ev] == ["set", "set", "set", "undo", "undo", "undo"]
        assert s.scalar(select(func.count()).select_from(PuzzleVerdict).where(PuzzleVerdict.user_id == a)) == 0


def test_agreement_kappa(store_db):
    ids = sorted(r["id"] for r in store_db.records)[:8]
    n = len(ids)
    assert n >= 4
    recs = {r["id"]: r for r in store_db.records}
    va = ["accept", "accept", "reject", "reject", "accept", "accept", "reject", "accept"][:n]
    vb = ["accept", "reject", "reject", "reject", "accept", "accept", "reject", "reject"][:n]
    with store_db.Session() as s:
        a, b, c = _users(s, "a", "b", "c")
        for p, x, y in zip(ids, va, vb):
            review.submit_verdict(s, a, p, x)
            review.submit_verdict(s, b, p, y)
        review.set_option_verdict(s, a, ids[0], _distractor(recs[ids[0]]), "reject", "ambiguous")
        review.set_option_verdict(s, b, ids[0], _distractor(recs[ids[0]]), "reject", "other", "odd")
        review.submit_verdict(s, c, ids[0], "accept")
        ag = review.agreement(s)
        pair = next(x for x in ag["puzzle"]["pairs"] if {x["a"], x["b"]} == {"a", "b"})
        # Cohen by hand: p_o = share of equal verdicts; p_e from each rater's accept share
        p_o = sum(x == y for x, y in zip(va, vb)) / n
        fa, fb = va.count("accept") / n, vb.count("accept") / n
        p_e = fa * fb + (1 - fa) * (1 - fb)
        assert pair["n_items"] == n and pair["kappa"] == pytest.approx((p_o - p_e) / (1 - p_e))
        assert ag["puzzle"]["n_items"] == n and -1 <= ag["puzzle"]["kappa"] <= 1
        assert ag["option"]["n_items"] > 0 and ag["option"]["observed"] <= 1
        pa = review.puzzle_agreement(s, ids[0])
        assert pa["n_raters"] == 3 and pa["agreement"] == 1.0
        assert pa["options"][_distractor(recs[ids[0]])] == pytest.approx(1 / 3)   # 2 reject, 1 keep


@pytest.fixture
def fresh_analytics(store_db):
    """The DuckDB copy is cached per database URL for the process, and the PostgreSQL test database is
    reused (truncated) between tests: start and end with no cached copy."""
    key = store_db.engine.url.render_as_string(hide_password=False)
    analytics._caches.pop(key, None)
    yield
    analytics._caches.pop(key, None)


def test_requeue_reopens_an_accepted_puzzle_for_its_curator(store_db, fresh_analytics):
    recs = {r["id"]: r for r in store_db.records}
    ids = sorted(recs)
    p = ids[0]
    d = _distractor(recs[p])
    with store_db.Session() as s:
        a, b = _users(s, "a", "b")
        boss = add_user(s, "rita", "researcher", "password-rita")[0].id
        s.commit()
        review.set_option_verdict(s, a, p, d, "reject", "too_easy")
        for pid in ids[1:] + [p]:                          # a judges everything, p last
            review.submit_verdict(s, a, pid, "accept")
        assert review.next_puzzle(s, a) is None
        assert review.puzzle_status(s, p)["status"] == "accepted"
        assert _analytics_verdicts(store_db.engine) == (len(ids), len(ids))   # warms the DuckDB copy

        with pytest.raises(UserError, match="only researchers and admins"):
            review.requeue(s, b, p, reason="curators cannot")
        with pytest.raises(UserError, match="no puzzle"):
            review.requeue(s, boss, "nope")
        assert review.puzzle_status(s, p)["status"] == "accepted"   # the refusal changed nothing

        out = review.requeue(s, boss, p, reason="zero-variance group")
        assert out["status"] == "pending" and out["cleared_verdicts"] == 1 and out["cleared_options"] == 1
        st = review.puzzle_status(s, p)
        assert (st["status"], st["n_reviews"], st["verdicts"], st["rejected_options"]) == ("pending", 0, [], {})
        assert review.next_puzzle(s, a) == p               # offered again to the curator who accepted it
        assert _analytics_verdicts(store_db.engine) == (len(ids) - 1, len(ids) - 1)   # replayed from history

        hist = review.history(s, puzzle_id=p)              # newest first; the old verdicts are all still there
        assert [(h["user"], h["action"], h["label"]) for h in hist] == [
            ("a", "cleared", d), ("a", "cleared", None), ("rita", "requeue", None),
            ("a", "set", None), ("a", "set", d)]
        rq = hist[2]
        assert rq["after"]["reason"] == "zero-variance group" and rq["before"]["status"] == "accepted"
        assert rq["created_at"] is not None and hist[1]["before"]["verdict"] == "accept"

        # a's latest change (accepting p) belongs to the closed round: undo skips it, reverts the one before
        assert review.undo_last(s, a)["puzzle_id"] == ids[-1]
        assert review.puzzle_status(s, p)["status"] == "pending"
        review.submit_verdict(s, a, p, "reject", reason="second look")  # the new round counts
        assert review.puzzle_status(s, p)["status"] == "rejected"
        assert _analytics_verdicts(store_db.engine) == (len(ids) - 1, len(ids) - 2)
        n_events = s.scalar(select(func.count()).select_from(VerdictEvent).where(VerdictEvent.puzzle_id == p))
        assert n_events == 6                               # append-only: 5 before + the new verdict


def _analytics_verdicts(engine) -> tuple[int, int]:
    """(decisive verdicts, accepts) as the DuckDB analytics see them."""
    rows = analytics.acceptance_by_video(engine)
    return sum(r["verdicts"] for r in rows), sum(r["accepted"] for r in rows)

"""Verdicts on puzzles and options, undo and requeue; every change is also appended to the history."""
from __future__ import annotations

from datetime import timedelta

from sqlalchemy import delete, exists, func, literal, select
from sqlalchemy.orm import Session, aliased

from db.models import Option, Puzzle, utcnow
from db.models.curation import (
    OPTION_VERDICTS,
    PUZZLE_VERDICTS,
    REASON_CODES,
    Lease,
    OptionVerdict,
    PuzzleVerdict,
    ReviewState,
    User,
    VerdictEvent,
)
from db.puzzles.audit_results import summary_of
from db.review.queue import DEFAULT_LEASE_S, aware, derive_status, overlap_k
from db.txn import run_txn
from mvp_core.errors import UserError

REQUEUE_ROLES = ("researcher", "admin")   # who may send a decided puzzle back to the queue


def _pv_state(v: PuzzleVerdict | None) -> dict | None:
    return None if v is None else {"verdict": v.verdict, "reason": v.reason, "seconds": v.seconds}


def _ov_state(v: OptionVerdict | None) -> dict | None:
    return None if v is None else {"verdict": v.verdict, "reason_code": v.reason_code, "note": v.note}


def _check_user_puzzle(session: Session, user_id: int, puzzle_id: str) -> None:
    if session.get(User, user_id) is None:
        raise UserError(f"no user with id {user_id}")
    if session.get(Puzzle, puzzle_id) is None:
        raise UserError(f"no puzzle {puzzle_id!r}")


def _lock_state(session: Session, puzzle_id: str) -> ReviewState:
    """Row-lock the puzzle's queue entry first, so concurrent verdicts on one puzzle recount in turn."""
    st = session.scalar(select(ReviewState).where(ReviewState.puzzle_id == puzzle_id).with_for_update())
    if st is None:
        st = ReviewState(puzzle_id=puzzle_id, n_reviews=0, n_accept=0, status="pending",
                         audit_shortcuts=session.scalar(select(summary_of(literal(puzzle_id)))))
        session.add(st)
        session.flush()
    return st


def _recount(session: Session, st: ReviewState) -> None:
    rows = dict(session.execute(
        select(PuzzleVerdict.verdict, func.count()).where(PuzzleVerdict.puzzle_id == st.puzzle_id)
        .group_by(PuzzleVerdict.verdict)).all())
    n_acc, n_rej = rows.get("accept", 0), rows.get("reject", 0)
    st.n_accept, st.n_reviews = n_acc, n_acc + n_rej
    st.status = derive_status(n_acc, n_rej, overlap_k(session))


def _apply_puzzle_state(session, user_id, puzzle_id, state: dict | None) -> None:
    cur = session.scalar(select(PuzzleVerdict).where(PuzzleVerdict.puzzle_id == puzzle_id,
                                                     PuzzleVerdict.user_id == user_id))
    if state is None:
        if cur is not None:
            session.delete(cur)
    elif cur is None:
        session.add(PuzzleVerdict(puzzle_id=puzzle_id, user_id=user_id, **state))
    else:
        cur.verdict, cur.reason, cur.seconds, cur.created_at = (state["verdict"], state["reason"],
                                                                state["seconds"], utcnow())
    session.flush()


def submit_verdict(session: Session, user_id: int, puzzle_id: str, verdict: str, reason: str = "",
                   seconds: float | None = None) -> dict:
    """Record (or change) this curator's verdict on a puzzle: accept | reject | skip. `seconds` is the
    time spent; by default the time since the puzzle was leased to them. Returns the puzzle's counts
    and status after the verdict."""
    if verdict not in PUZZLE_VERDICTS:
        raise UserError(f"verdict must be one of {', '.join(PUZZLE_VERDICTS)}, not {verdict!r}")
    if seconds is not None and (seconds < 0 or seconds != seconds):
        raise UserError("seconds must be a non-negative number")

    def txn():
        _check_user_puzzle(session, user_id, puzzle_id)
        t = utcnow()
        st = _lock_state(session, puzzle_id)
        lease = session.scalar(select(Lease).where(Lease.user_id == user_id, Lease.puzzle_id == puzzle_id))
        secs = seconds
        if secs is None:
            secs = max(0.0, (t - aware(lease.started_at)).total_seconds()) if lease is not None else 0.0
        cur = session.scalar(select(PuzzleVerdict).where(PuzzleVerdict.puzzle_id == puzzle_id,
                                                         PuzzleVerdict.user_id == user_id))
        before = _pv_state(cur)
        after = {"verdict": verdict, "reason": reason or "", "seconds": float(secs)}
        if before is None or (before["verdict"], before["reason"]) != (after["verdict"], after["reason"]):
            _apply_puzzle_state(session, user_id, puzzle_id, after)
            session.add(VerdictEvent(user_id=user_id, puzzle_id=puzzle_id, label=None, action="set",
                                     before=before, after=after, created_at=t))
            _recount(session, st)
        elif verdict == "skip":      # skipped again: to the end of the skipped puzzles (db.review.queue_rule)
            cur.created_at = t
        if lease is not None:
            session.delete(lease)
        session.flush()
        return {"puzzle_id": puzzle_id, "status": st.status, "n_reviews": st.n_reviews,
                "n_accept": st.n_accept}
    return run_txn(session, txn)


def set_option_verdict(session: Session, user_id: int, puzzle_id: str, label: str, verdict: str,
                       reason_code: str | None = None, note: str = "") -> dict:
    """Keep or reject one distractor. A reject needs a reason code (near_duplicate, ambiguous,
    too_easy, broken_frame, other); `note` is free text. Targets cannot be rejected."""
    if verdict not in OPTION_VERDICTS:
        raise UserError(f"option verdict must be one of {', '.join(OPTION_VERDICTS)}, not {verdict!r}")
    if verdict == "reject" and reason_code not in REASON_CODES:
        raise UserError(f"rejecting an option needs a reason code: {', '.join(REASON_CODES)}")
    if reason_code is not None and reason_code not in REASON_CODES:
        raise UserError(f"unknown reason code {reason_code!r}; choose one of {', '.join(REASON_CODES)}")

    def txn():
        _check_user_puzzle(session, user_id, puzzle_id)
        opt = session.execute(select(Option.id, Option.kind).where(
            Option.puzzle_id == puzzle_id, Option.label == label)).first()
        if opt is None:
            raise UserError(f"puzzle {puzzle_id} has no option {label!r}")
        if opt.kind == "target":
            raise UserError(f"option {label} is a target, not a distractor; reject the puzzle instead")
        cur = session.scalar(select(OptionVerdict).where(
            OptionVerdict.puzzle_id == puzzle_id, OptionVerdict.label == label,
            OptionVerdict.user_id == user_id))
        before = _ov_state(cur)
        after = {"verdict": verdict, "reason_code": reason_code, "note": note or ""}
        if before != after:
            _apply_option_state(session, user_id, puzzle_id, label, opt.id, after)
            session.add(VerdictEvent(user_id=user_id, puzzle_id=puzzle_id, label=label, action="set",
                                     before=before, after=after))
        session.flush()
        return {"puzzle_id": puzzle_id, "label": label, **after}
    return run_txn(session, txn)


def _apply_option_state(session, user_id, puzzle_id, label, option_id, state: dict | None) -> None:
    cur = session.scalar(select(OptionVerdict).where(
        OptionVerdict.puzzle_id == puzzle_id, OptionVerdict.label == label, OptionVerdict.user_id == user_id))
    if state is None:
        if cur is not None:
            session.delete(cur)
    elif cur is None:
        session.add(OptionVerdict(puzzle_id=puzzle_id, label=label, option_id=option_id,
                                  user_id=user_id, **state))
    else:
        cur.verdict, cur.reason_code, cur.note, cur.created_at = (state["verdict"], state["reason_code"],
                                                                  state["note"], utcnow())
    session.flush()


def undo_last(session: Session, user_id: int, lease_s: float = DEFAULT_LEASE_S) -> dict | None:
    """Revert this curator's most recent verdict change that is not undone yet (repeatable: each call
    goes one step further back); a bulk action's changes are undone as one batch instead
    (`db.review.bulk.undo_batch`). The history keeps both the change and its undo. An undone puzzle
    verdict leases the puzzle back to the curator, so `next_puzzle` shows it again. Returns what was
    undone ({"puzzle_id", "label", "restored"}) or None when there is nothing to undo."""

    def txn():
        undone = select(VerdictEvent.undoes).where(VerdictEvent.undoes.is_not(None)).scalar_subquery()
        # a change made before its puzzle was requeued belongs to a closed review round: not undoable
        rq = aliased(VerdictEvent)
        requeued_later = exists().where(rq.puzzle_id == VerdictEvent.puzzle_id, rq.action == "requeue",
                                        rq.id > VerdictEvent.id)
        ev = session.scalar(
            select(VerdictEvent).where(VerdictEvent.user_id == user_id, VerdictEvent.action == "set",
                                       VerdictEvent.batch_id.is_(None),     # a bulk batch is undone as one
                                       VerdictEvent.id.not_in(undone), ~requeued_later)
            .order_by(VerdictEvent.id.desc()).limit(1))
        if ev is None:
            return None
        if ev.label is None:
            st = _lock_state(session, ev.puzzle_id)
            _apply_puzzle_state(session, user_id, ev.puzzle_id, ev.before)
            _recount(session, st)
            t = utcnow()
            session.execute(delete(Lease).where(Lease.user_id == user_id, Lease.puzzle_id == ev.puzzle_id))
            session.add(Lease(puzzle_id=ev.puzzle_id, user_id=user_id, started_at=t,
                              expires_at=t + timedelta(seconds=lease_s)))
        else:
            option_id = session.scalar(select(Option.id).where(Option.puzzle_id == ev.puzzle_id,
                                                               Option.label == ev.label))
            _apply_option_state(session, user_id, ev.puzzle_id, ev.label, option_id, ev.before)
        session.add(VerdictEvent(user_id=user_id, puzzle_id=ev.puzzle_id, label=ev.label, action="undo",
                                 undoes=ev.id, before=ev.after, after=ev.before))
        session.flush()
        return {"puzzle_id": ev.puzzle_id, "label": ev.label, "restored": ev.before}
    return run_txn(session, txn)


def check_may_requeue(user: User) -> None:
    """UserError (one line) unless the user's role may send puzzles back to the queue (REQUEUE_ROLES)."""
    if user.role not in REQUEUE_ROLES:
        raise UserError(f"only researchers and admins may send a puzzle back to the curation queue; "
                        f"{user.name!r} is a {user.role}")


def requeue(session: Session, user_id: int, puzzle_id: str, reason: str = "") -> dict:
    """Send a puzzle back to the curation queue (e.g. from the rollouts page, for a group whose answers
    all scored the same): a new review round. Only researchers and admins may do it (checked here too,
    not only by the page). The current puzzle and option verdicts of every curator are removed from the
    current-verdict tables, so the status is pending again and `next_puzzle` hands the puzzle out to
    any curator, including those who reviewed it before; nothing leaves the history: one "requeue" event
    (who, when, reason, the status before) is appended, followed by one "cleared" event per removed
    verdict (its curator as user, the verdict as `before`, no `after`), so replaying the history (as
    the analytics do) gives the same current verdicts. Returns the new status and what was cleared."""

    def txn():
        _check_user_puzzle(session, user_id, puzzle_id)
        check_may_requeue(session.get(User, user_id))
        t = utcnow()
        st = _lock_state(session, puzzle_id)      # serialises with verdicts on this puzzle
        pvs = session.scalars(select(PuzzleVerdict).where(PuzzleVerdict.puzzle_id == puzzle_id)
                              .order_by(PuzzleVerdict.id)).all()
        ovs = session.scalars(select(OptionVerdict).where(OptionVerdict.puzzle_id == puzzle_id)
                              .order_by(OptionVerdict.id)).all()
        ev = VerdictEvent(user_id=user_id, puzzle_id=puzzle_id, label=None, action="requeue",
                          before={"status": st.status, "n_reviews": st.n_reviews, "n_accept": st.n_accept},
                          after={"status": "pending", "reason": reason or "",
                                 "cleared": len(pvs) + len(ovs)}, created_at=t)
        session.add(ev)
        session.flush()                           # the requeue row comes before its cleared rows
        for v in pvs:
            session.add(VerdictEvent(user_id=v.user_id, puzzle_id=puzzle_id, label=None, action="cleared",
                                     before=_pv_state(v), after=None, created_at=t))
            session.delete(v)
        for o in ovs:
            session.add(VerdictEvent(user_id=o.user_id, puzzle_id=puzzle_id, label=o.label, action="cleared",
                                     before=_ov_state(o), after=None, created_at=t))
            session.delete(o)
        session.flush()
        _recount(session, st)
        session.flush()
        return {"puzzle_id": puzzle_id, "status": st.status, "event_id": ev.id,
                "cleared_verdicts": len(pvs), "cleared_options": len(ovs)}
    return run_txn(session, txn)


def history(session: Session, puzzle_id: str | None = None, user_id: int | None = None,
            limit: int = 200) -> list[dict]:
    """The verdict history, newest first."""
    q = select(VerdictEvent, User.name).join(User, User.id == VerdictEvent.user_id)
    if puzzle_id is not None:
        q = q.where(VerdictEvent.puzzle_id == puzzle_id)
    if user_id is not None:
        q = q.where(VerdictEvent.user_id == user_id)
    rows = session.execute(q.order_by(VerdictEvent.id.desc()).limit(limit)).all()
    return [{"id": e.id, "user": name, "puzzle_id": e.puzzle_id, "label": e.label, "action": e.action,
             "undoes": e.undoes, "before": e.before, "after": e.after, "created_at": aware(e.created_at)}
            for e, name in rows]



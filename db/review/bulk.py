"""Bulk actions from the gallery: accept, reject with a reason, send back to the queue, tag, on a
list of puzzles; and undo of a whole batch (docs/store.md, "Gallery").

A bulk verdict is ordinary verdicts: one `puzzle_verdicts` row per puzzle as the actor, with the
reason, and one `verdict_events` row per change, so the review rule, the status, agreement and the
history count it like verdicts given one at a time. Each change also names its batch
(`verdict_events.batch_id`), which is what undo removes as one: a puzzle's verdict is restored only
where it is still what the batch set. Who may: `db.review.access.check_may_judge_all` (verdicts),
`db.review.verdicts.check_may_requeue` (send back), `db.review.tags.check_may_tag` (tags).

Set-based rather than `submit_verdict` per puzzle: 10,000 puzzles are a few statements per 500 ids
(docs/BENCHMARKS.md, "Gallery"), and every row is written in one transaction, so a refusal or a
fault leaves nothing half done."""
from __future__ import annotations

from sqlalchemy import delete, func, select, tuple_
from sqlalchemy.orm import Session

from db.chunks import in_chunks
from db.models import Option, Puzzle, utcnow
from db.models.curation import Lease, OptionVerdict, PuzzleVerdict, ReviewState, User, VerdictEvent
from db.models.gallery import BulkBatch, PuzzleTag
from db.review.access import check_may_judge_all
from db.review.bulk_rows import among, id_chunks, insert_rows, update_rows
from db.review.gallery import MAX_MATCH
from db.review.queue import derive_status, overlap_k, sync_queue
from db.review.tags import check_may_tag, clean_tag, insert_tags
from db.review.verdicts import check_may_requeue
from db.txn import run_txn
from mvp_core.errors import UserError

BULK_ACTIONS = ("accept", "reject", "requeue", "tag")
# Set-based statements skip the ORM's matching of loaded objects (its "fetch" re-selects every row)
# and inserts go to the tables (Core executemany, not the ORM's bulk path): nothing in the session
# holds these rows.
NO_SYNC = {"synchronize_session": False}


def _check_ids(session: Session, ids) -> list[str]:
    if not isinstance(ids, (list, tuple)) or not all(isinstance(p, str) for p in ids):
        raise UserError("the puzzles must be a list of puzzle ids")
    ids = list(dict.fromkeys(ids))
    if not ids:
        raise UserError("no puzzles selected")
    if len(ids) > MAX_MATCH:
        raise UserError(f"at most {MAX_MATCH} puzzles at once, not {len(ids)}")
    for chunk in id_chunks(session, ids):
        found = set(session.scalars(select(Puzzle.id).where(among(session, Puzzle.id, chunk))))
        missing = next((p for p in chunk if p not in found), None)
        if missing is not None:
            raise UserError(f"no puzzle {missing[:40]!r}")
    return ids


def _lock(session: Session, ids: list[str]) -> None:
    """Row-lock the puzzles' queue entries in id order (as `submit_verdict` locks one), so a bulk
    action and single verdicts on the same puzzles recount in turn."""
    sync_queue(session)
    for chunk in id_chunks(session, sorted(ids)):
        session.execute(select(ReviewState.puzzle_id).where(among(session, ReviewState.puzzle_id, chunk))
                        .order_by(ReviewState.puzzle_id).with_for_update())


def _recount(session: Session, ids: list[str]) -> None:
    """Recount the puzzles' review counters and status from their verdicts with the same rule as one
    verdict's recount (`derive_status`): one grouped count and one UPDATE of many rows per chunk (a
    correlated count per row was planned as a scan of a table the batch had just grown on PostgreSQL)."""
    k = overlap_k(session)
    for chunk in id_chunks(session, ids):
        counts: dict[str, dict[str, int]] = {p: {} for p in chunk}
        for p, v, n in session.execute(select(PuzzleVerdict.puzzle_id, PuzzleVerdict.verdict, func.count())
                                       .where(among(session, PuzzleVerdict.puzzle_id, chunk))
                                       .group_by(PuzzleVerdict.puzzle_id, PuzzleVerdict.verdict)):
            counts[p][v] = n
        update_rows(session, ReviewState.__table__, "puzzle_id", [
            {"puzzle_id": p, "n_accept": c.get("accept", 0), "n_reviews": c.get("accept", 0) + c.get("reject", 0),
             "status": derive_status(c.get("accept", 0), c.get("reject", 0), k)} for p, c in counts.items()])


def _batch(session: Session, user: User, action: str, reason: str) -> BulkBatch:
    b = BulkBatch(user_id=user.id, action=action, reason=reason, n_puzzles=0, created_at=utcnow())
    session.add(b)
    session.flush()
    return b


def _user(session: Session, user_id: int) -> User:
    user = session.get(User, user_id)
    if user is None:
        raise UserError(f"no user with id {user_id}")
    return user


def bulk_action(session: Session, user_id: int, ids, action: str, reason: str = "", tag: str = "") -> dict:
    """Apply `action` (accept | reject | requeue | tag) to the puzzles `ids` as one batch. A reject
    needs a reason; a tag needs a tag. Returns {"batch_id", "action", "n_selected", "n_changed"}."""
    if action not in BULK_ACTIONS:
        raise UserError(f"a bulk action is one of {', '.join(BULK_ACTIONS)}, not {str(action)[:20]!r}")
    reason = (reason or "").strip() if isinstance(reason, str) else ""
    if action == "reject" and not reason:
        raise UserError("a bulk reject needs a reason")
    if len(reason) > 2000:
        raise UserError("a reason is at most 2000 characters")
    tag = clean_tag(tag) if action == "tag" else ""

    def txn():
        user = _user(session, user_id)
        pids = _check_ids(session, ids)
        if action == "tag":
            check_may_tag(session, user_id)
            b = _batch(session, user, action, tag)
            changed = insert_tags(session, user_id, pids, tag, b.id)
        elif action == "requeue":
            check_may_requeue(user)
            b = _batch(session, user, action, reason)
            changed = _requeue(session, user, pids, reason, b.id)
        else:
            check_may_judge_all(session, user, pids)
            b = _batch(session, user, action, reason)
            changed = _verdicts(session, user, pids, action, reason, b.id)
        b.n_puzzles = len(changed)
        return {"batch_id": b.id, "action": action, "n_selected": len(pids), "n_changed": len(changed)}
    return run_txn(session, txn)


def _state(v) -> dict:
    return {"verdict": v.verdict, "reason": v.reason, "seconds": v.seconds}


def _verdicts(session: Session, user: User, ids: list[str], verdict: str, reason: str, batch_id: int) -> list[str]:
    t = utcnow()
    _lock(session, ids)
    after = {"verdict": verdict, "reason": reason, "seconds": 0.0}
    events, changed = [], []
    for chunk in id_chunks(session, ids):
        cur = {v.puzzle_id: _state(v) for v in session.execute(
            select(PuzzleVerdict.puzzle_id, PuzzleVerdict.verdict, PuzzleVerdict.reason, PuzzleVerdict.seconds)
            .where(PuzzleVerdict.user_id == user.id, among(session, PuzzleVerdict.puzzle_id, chunk)))}
        for p in chunk:
            before = cur.get(p)
            if before is None or (before["verdict"], before["reason"]) != (verdict, reason):
                changed.append(p)
                events.append({"user_id": user.id, "puzzle_id": p, "label": None, "action": "set",
                               "before": before, "after": after, "created_at": t, "batch_id": batch_id})
    _set_verdicts(session, user.id, {p: after for p in changed}, t)
    insert_rows(session, VerdictEvent.__table__, events)
    for chunk in id_chunks(session, changed):
        session.execute(delete(Lease).where(Lease.user_id == user.id, among(session, Lease.puzzle_id, chunk)),
                        execution_options=NO_SYNC)
    _recount(session, changed)
    return changed


def _set_verdicts(session: Session, user_id: int, states: dict[str, dict | None], t) -> None:
    """Make the user's current verdict on each puzzle the given state (None: no verdict)."""
    ids = list(states)
    for chunk in id_chunks(session, ids):
        session.execute(delete(PuzzleVerdict).where(PuzzleVerdict.user_id == user_id,
                                                    among(session, PuzzleVerdict.puzzle_id, chunk)),
                        execution_options=NO_SYNC)
    insert_rows(session, PuzzleVerdict.__table__, [{"puzzle_id": p, "user_id": user_id, "created_at": t, **s}
                                                    for p, s in states.items() if s is not None])


def _requeue(session: Session, user: User, ids: list[str], reason: str, batch_id: int) -> list[str]:
    """`db.review.verdicts.requeue` for many puzzles: one "requeue" event each (all of them first, so
    each comes before its "cleared" rows), one "cleared" event per removed verdict."""
    t = utcnow()
    _lock(session, ids)
    heads, cleared, changed = [], [], []
    for chunk in id_chunks(session, ids):
        states = {p: (st, n, a) for p, st, n, a in session.execute(
            select(ReviewState.puzzle_id, ReviewState.status, ReviewState.n_reviews, ReviewState.n_accept)
            .where(among(session, ReviewState.puzzle_id, chunk)))}
        pvs = session.execute(select(PuzzleVerdict.puzzle_id, PuzzleVerdict.user_id, PuzzleVerdict.verdict,
                                     PuzzleVerdict.reason, PuzzleVerdict.seconds)
                              .where(among(session, PuzzleVerdict.puzzle_id, chunk)).order_by(PuzzleVerdict.id)).all()
        ovs = session.execute(select(OptionVerdict.puzzle_id, OptionVerdict.user_id, OptionVerdict.label,
                                     OptionVerdict.verdict, OptionVerdict.reason_code, OptionVerdict.note)
                              .where(among(session, OptionVerdict.puzzle_id, chunk)).order_by(OptionVerdict.id)).all()
        n_cleared: dict[str, int] = {}
        for v in pvs:
            n_cleared[v.puzzle_id] = n_cleared.get(v.puzzle_id, 0) + 1
            cleared.append({"user_id": v.user_id, "puzzle_id": v.puzzle_id, "label": None, "action": "cleared",
                            "before": _state(v), "after": None, "created_at": t, "batch_id": batch_id})
        for o in ovs:
            n_cleared[o.puzzle_id] = n_cleared.get(o.puzzle_id, 0) + 1
            cleared.append({"user_id": o.user_id, "puzzle_id": o.puzzle_id, "label": o.label, "action": "cleared",
                            "before": {"verdict": o.verdict, "reason_code": o.reason_code, "note": o.note},
                            "after": None, "created_at": t, "batch_id": batch_id})
        for p in chunk:
            st, n, a = states.get(p, ("pending", 0, 0))
            if n_cleared.get(p):
                changed.append(p)
                heads.append({"user_id": user.id, "puzzle_id": p, "label": None, "action": "requeue",
                              "before": {"status": st, "n_reviews": n, "n_accept": a},
                              "after": {"status": "pending", "reason": reason, "cleared": n_cleared[p]},
                              "created_at": t, "batch_id": batch_id})
        session.execute(delete(PuzzleVerdict).where(among(session, PuzzleVerdict.puzzle_id, chunk)),
                        execution_options=NO_SYNC)
        session.execute(delete(OptionVerdict).where(among(session, OptionVerdict.puzzle_id, chunk)),
                        execution_options=NO_SYNC)
    for rows in (heads, cleared):
        insert_rows(session, VerdictEvent.__table__, rows)
    _recount(session, changed)
    return changed


def undo_batch(session: Session, user_id: int, batch_id: int) -> dict:
    """Undo a bulk batch as one: its tags are removed; each verdict it set is put back to what it was
    (where it is still what the batch set: a later change by hand is kept); each verdict a send-back
    cleared is restored (where its curator has none since). Every restored change appends an "undo"
    event, as a single undo does. Only the batch's actor may undo it, once.
    Returns {"batch_id", "action", "n_restored", "n_kept"}."""
    if not isinstance(batch_id, int) or isinstance(batch_id, bool):
        raise UserError("a batch id is a number")

    def txn():
        b = session.scalar(select(BulkBatch).where(BulkBatch.id == batch_id).with_for_update())
        if b is None or b.user_id != user_id:
            raise UserError(f"you have no bulk action {batch_id}")
        if b.undone_at is not None:
            raise UserError(f"bulk action {batch_id} is already undone")
        t = utcnow()
        if b.action == "tag":
            n = session.execute(delete(PuzzleTag).where(PuzzleTag.batch_id == b.id),
                                execution_options=NO_SYNC).rowcount or 0
            out = {"n_restored": n, "n_kept": 0}
        else:
            out = _undo_events(session, b, t)
        b.undone_at = t
        return {"batch_id": b.id, "action": b.action, **out}
    return run_txn(session, txn)


def _undo_events(session: Session, b: BulkBatch, t) -> dict:
    evs = session.execute(select(VerdictEvent.id, VerdictEvent.user_id, VerdictEvent.puzzle_id, VerdictEvent.label,
                                 VerdictEvent.action, VerdictEvent.before, VerdictEvent.after)
                          .where(VerdictEvent.batch_id == b.id, VerdictEvent.action.in_(("set", "cleared")))
                          .order_by(VerdictEvent.id)).all()
    ids = sorted({e.puzzle_id for e in evs})
    _lock(session, ids)
    cur_pv: dict[tuple, dict] = {}
    cur_ov: set[tuple] = set()
    for chunk in id_chunks(session, ids):
        for v in session.execute(select(PuzzleVerdict.puzzle_id, PuzzleVerdict.user_id, PuzzleVerdict.verdict,
                                        PuzzleVerdict.reason, PuzzleVerdict.seconds)
                                 .where(among(session, PuzzleVerdict.puzzle_id, chunk))):
            cur_pv[(v.puzzle_id, v.user_id)] = _state(v)
        cur_ov |= {tuple(r) for r in session.execute(select(OptionVerdict.puzzle_id, OptionVerdict.user_id,
                                                            OptionVerdict.label)
                                                     .where(among(session, OptionVerdict.puzzle_id, chunk)))}
    pv_states: dict[int, dict[str, dict | None]] = {}
    ov_rows, undo_rows, kept = [], [], 0
    for e in evs:
        if e.label is None:
            now = cur_pv.get((e.puzzle_id, e.user_id))
            still = (now is not None and e.after is not None and
                     (now["verdict"], now["reason"]) == (e.after["verdict"], e.after["reason"])) \
                if e.action == "set" else now is None
            if not still:
                kept += 1
                continue
            pv_states.setdefault(e.user_id, {})[e.puzzle_id] = e.before
        else:
            if (e.puzzle_id, e.user_id, e.label) in cur_ov:
                kept += 1
                continue
            ov_rows.append((e, e.before))
        undo_rows.append({"user_id": e.user_id, "puzzle_id": e.puzzle_id, "label": e.label, "action": "undo",
                          "undoes": e.id, "before": e.after, "after": e.before, "created_at": t,
                          "batch_id": b.id})
    for uid, states in pv_states.items():
        _set_verdicts(session, uid, states, t)
    if ov_rows:
        opt_ids = _option_ids(session, {(e.puzzle_id, e.label) for e, _ in ov_rows})
        insert_rows(session, OptionVerdict.__table__, [
            {"puzzle_id": e.puzzle_id, "label": e.label, "user_id": e.user_id, "created_at": t,
             "option_id": opt_ids[(e.puzzle_id, e.label)], **s} for e, s in ov_rows])
    insert_rows(session, VerdictEvent.__table__, undo_rows)
    _recount(session, ids)
    return {"n_restored": len(undo_rows), "n_kept": kept}


def _option_ids(session: Session, keys: set[tuple[str, str]]) -> dict[tuple[str, str], int]:
    out: dict[tuple[str, str], int] = {}
    for chunk in in_chunks(sorted(keys)):
        out.update(((p, lab), i) for i, p, lab in session.execute(
            select(Option.id, Option.puzzle_id, Option.label).where(tuple_(Option.puzzle_id, Option.label).in_(chunk))))
    return out


def batches(session: Session, user_id: int, limit: int = 20) -> list[dict]:
    """This user's latest bulk actions, newest first (what the gallery offers to undo)."""
    return [{"batch_id": i, "action": a, "reason": r, "n_puzzles": n, "created_at": at, "undone": u is not None}
            for i, a, r, n, at, u in session.execute(
                select(BulkBatch.id, BulkBatch.action, BulkBatch.reason, BulkBatch.n_puzzles, BulkBatch.created_at,
                       BulkBatch.undone_at).where(BulkBatch.user_id == user_id)
                .order_by(BulkBatch.id.desc()).limit(limit))]

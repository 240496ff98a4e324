"""The admins' overview of curation (docs/store.md, "Overview"): per curator, verdicts, verdicts per
hour of work, agreement with the others (Cohen's kappa, `db.review.stats.agreement`), what is left for
them in the queue and in overlap; per video, how far curation has come. Counts by SQL on both engines."""
from __future__ import annotations

from datetime import timedelta

from sqlalchemy import case, exists, func, select
from sqlalchemy.orm import Session

from db.models import Puzzle, Video, utcnow
from db.models.curation import PuzzleVerdict, ReviewState, User
from db.review.queue import overlap_k
from db.review.stats import DECISIVE, agreement


def _kappa_of(pairs: list[dict]) -> dict[str, tuple[float | None, int]]:
    """{curator: (their Cohen's kappa with each other curator, averaged weighted by shared puzzles,
    puzzles shared)}; pairs whose kappa is undefined count only toward the shared puzzles."""
    acc: dict[str, list[float]] = {}
    for p in pairs:
        for me in (p["a"], p["b"]):
            s = acc.setdefault(me, [0.0, 0.0, 0])
            if p["kappa"] is not None:
                s[0] += p["kappa"] * p["n_items"]
                s[1] += p["n_items"]
            s[2] += p["n_items"]
    return {u: (s[0] / s[1] if s[1] else None, int(s[2])) for u, s in acc.items()}


def curator_overview(session: Session) -> list[dict]:
    """One row per curator or admin: name, role, verdicts (accept + reject), skips, per_hour (verdicts
    per hour of the time spent on them; None when no time was recorded), last_24h, kappa (with the
    others), shared (puzzles judged with another), queue_left (puzzles still open to them: fewer than
    k reviews and none of them theirs), overlap_left (of those, the ones another curator started)."""
    k = overlap_k(session)
    since = utcnow() - timedelta(hours=24)
    pv = PuzzleVerdict
    decisive = pv.verdict.in_(DECISIVE)
    stats = {r.user_id: r for r in session.execute(
        select(pv.user_id, func.sum(case((decisive, 1), else_=0)).label("n"),
               func.sum(case((decisive, 0), else_=1)).label("skips"),
               func.sum(case((decisive, pv.seconds), else_=0.0)).label("secs"),
               func.sum(case((decisive & (pv.created_at >= since), 1), else_=0)).label("recent"))
        .group_by(pv.user_id))}
    kappas = _kappa_of(agreement(session)["puzzle"]["pairs"])
    open_ = select(func.count()).select_from(ReviewState).where(ReviewState.n_reviews < k)
    out = []
    for uid, name, role in session.execute(select(User.id, User.name, User.role)
                                           .where(User.role.in_(("curator", "admin"))).order_by(User.name)):
        mine = ~exists().where(pv.puzzle_id == ReviewState.puzzle_id, pv.user_id == uid, decisive)
        s = stats.get(uid)
        n, secs = (int(s.n or 0), float(s.secs or 0.0)) if s else (0, 0.0)
        kappa, shared = kappas.get(name, (None, 0))
        out.append({"name": name, "role": role, "verdicts": n, "skips": int(s.skips or 0) if s else 0,
                    "per_hour": n / secs * 3600 if secs > 0 else None,
                    "last_24h": int(s.recent or 0) if s else 0, "kappa": kappa, "shared": shared,
                    "queue_left": session.scalar(open_.where(mine)) or 0,
                    "overlap_left": session.scalar(open_.where(mine, ReviewState.n_reviews > 0)) or 0})
    return out


def video_overview(session: Session) -> list[dict]:
    """One row per video: name, puzzles, and how many are accepted / rejected / disputed / pending."""
    rows: dict[str, dict] = {}
    for vid, path, status, n in session.execute(
            select(Video.id, Video.path, ReviewState.status, func.count()).select_from(Puzzle)
            .join(Video, Video.id == Puzzle.video_id)
            .join(ReviewState, ReviewState.puzzle_id == Puzzle.id, isouter=True)
            .group_by(Video.id, Video.path, ReviewState.status)):
        r = rows.setdefault(vid, {"video": path.rsplit("/", 1)[-1], "puzzles": 0, "accepted": 0, "rejected": 0,
                                  "disputed": 0, "pending": 0})
        r[status or "pending"] += n            # no review_state row yet: pending
        r["puzzles"] += n
    for r in rows.values():
        r["done"] = (r["puzzles"] - r["pending"]) / r["puzzles"] if r["puzzles"] else 0.0
    return sorted(rows.values(), key=lambda r: r["video"])

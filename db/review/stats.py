"""Review statistics: a puzzle's status, progress counts and inter-curator agreement.

Option-level ratings: every curator with a decisive verdict (accept/reject) on a puzzle rates each of
its distractors; no option verdict means "keep" (the UI only asks for rejects)."""
from __future__ import annotations

from collections import Counter, defaultdict
from itertools import combinations

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from db.chunks import in_chunks
from db.models import Option, Puzzle
from db.models.curation import OptionVerdict, PuzzleVerdict, ReviewState, User
from db.review.kappa import cohen_kappa, fleiss_kappa, item_agreement

# The one definition of a verdict, used by every page and count: a puzzle verdict is an accept or a
# reject. A skip is recorded (the curator passed on it) but is not a verdict: it counts toward no
# puzzle's reviews, no curator's verdicts and no throughput.
DECISIVE = ("accept", "reject")


def is_verdict(v: str) -> bool:
    return v in DECISIVE


def decisive_sql(column: str) -> str:
    """`column IN ('accept', 'reject')` for SQL written by hand (the DuckDB analytics)."""
    return f"{column} IN ({', '.join(repr(v) for v in DECISIVE)})"


def puzzle_status(session: Session, puzzle_id: str) -> dict:
    """{"status", "n_reviews", "n_accept", "verdicts": [{user, verdict, reason, seconds}],
    "rejected_options": {label: n_rejects}}."""
    st = session.get(ReviewState, puzzle_id)
    verdicts = session.execute(
        select(User.name, PuzzleVerdict.verdict, PuzzleVerdict.reason, PuzzleVerdict.seconds)
        .join(User, User.id == PuzzleVerdict.user_id).where(PuzzleVerdict.puzzle_id == puzzle_id)
        .order_by(PuzzleVerdict.id)).all()
    rejects = dict(session.execute(
        select(OptionVerdict.label, func.count()).where(OptionVerdict.puzzle_id == puzzle_id,
                                                        OptionVerdict.verdict == "reject")
        .group_by(OptionVerdict.label)).all())
    return {"puzzle_id": puzzle_id,
            "status": st.status if st else "pending",
            "n_reviews": st.n_reviews if st else 0,
            "n_accept": st.n_accept if st else 0,
            "verdicts": [dict(r._mapping) for r in verdicts],
            "rejected_options": rejects}


def progress(session: Session, user_id: int | None = None) -> dict:
    """Counts for the progress bar: total puzzles; mine (reviewed = decisive, skipped); everyone
    (puzzles by status, and how many have all the reviews they need)."""
    total = session.scalar(select(func.count()).select_from(Puzzle)) or 0
    by_status = dict(session.execute(select(ReviewState.status, func.count())
                                     .group_by(ReviewState.status)).all())
    by_status["pending"] = total - sum(v for s, v in by_status.items() if s != "pending")
    out = {"total": total,
           "everyone": {"reviewed": total - by_status["pending"], "by_status": by_status,
                        "verdicts": session.scalar(select(func.count()).select_from(PuzzleVerdict)
                                                   .where(PuzzleVerdict.verdict.in_(DECISIVE))) or 0,
                        "skips": session.scalar(select(func.count()).select_from(PuzzleVerdict)
                                                .where(PuzzleVerdict.verdict.not_in(DECISIVE))) or 0}}
    if user_id is not None:
        mine = dict(session.execute(select(PuzzleVerdict.verdict, func.count())
                                    .where(PuzzleVerdict.user_id == user_id)
                                    .group_by(PuzzleVerdict.verdict)).all())
        out["mine"] = {"reviewed": mine.get("accept", 0) + mine.get("reject", 0),
                       "accepted": mine.get("accept", 0), "rejected": mine.get("reject", 0),
                       "skipped": mine.get("skip", 0), "total": total}
    return out


def _decisive(session: Session, puzzle_id: str | None = None) -> dict[str, dict[int, str]]:
    """{puzzle_id: {user_id: accept|reject}} over puzzles with at least two decisive verdicts."""
    multi = (select(PuzzleVerdict.puzzle_id).where(PuzzleVerdict.verdict.in_(DECISIVE))
             .group_by(PuzzleVerdict.puzzle_id).having(func.count() >= 2))
    q = select(PuzzleVerdict.puzzle_id, PuzzleVerdict.user_id, PuzzleVerdict.verdict).where(
        PuzzleVerdict.verdict.in_(DECISIVE))
    q = q.where(PuzzleVerdict.puzzle_id == puzzle_id) if puzzle_id else q.where(
        PuzzleVerdict.puzzle_id.in_(multi))
    out: dict[str, dict[int, str]] = defaultdict(dict)
    for pid, uid, v in session.execute(q):
        out[pid][uid] = v
    return out


def _option_ratings(session: Session, decisive: dict[str, dict[int, str]]) -> dict[tuple, dict[int, str]]:
    """{(puzzle_id, label): {user_id: keep|reject}} for the distractors of the given puzzles."""
    if not decisive:
        return {}
    pids = list(decisive)
    rejects: set[tuple] = set()
    labels: dict[str, list[str]] = defaultdict(list)
    for chunk in in_chunks(pids):
        rejects |= set(tuple(r) for r in session.execute(select(OptionVerdict.puzzle_id, OptionVerdict.label,
                                              OptionVerdict.user_id)
                                       .where(OptionVerdict.puzzle_id.in_(chunk),
                                              OptionVerdict.verdict == "reject")))
        for pid, label in session.execute(select(Option.puzzle_id, Option.label)
                                          .where(Option.puzzle_id.in_(chunk), Option.kind != "target")):
            labels[pid].append(label)
    return {(pid, lab): {uid: "reject" if (pid, lab, uid) in rejects else "keep" for uid in decisive[pid]}
            for pid in pids for lab in labels[pid]}


def puzzle_agreement(session: Session, puzzle_id: str) -> dict:
    """Observed agreement on one puzzle (share of agreeing curator pairs), overall and per distractor."""
    dec = _decisive(session, puzzle_id)
    raters = dec.get(puzzle_id, {})
    opts = _option_ratings(session, {puzzle_id: raters}) if raters else {}
    return {"puzzle_id": puzzle_id, "n_raters": len(raters),
            "agreement": item_agreement(Counter(raters.values())),
            "options": {lab: item_agreement(Counter(r.values())) for (_, lab), r in sorted(opts.items())}}


def _pairwise(ratings: dict, names: dict[int, str]) -> list[dict]:
    by_user: dict[int, dict] = defaultdict(dict)
    for item, r in ratings.items():
        for uid, v in r.items():
            by_user[uid][item] = v
    out = []
    for u1, u2 in combinations(sorted(by_user), 2):
        common = sorted(set(by_user[u1]) & set(by_user[u2]), key=str)
        if common:
            out.append({"a": names.get(u1, str(u1)), "b": names.get(u2, str(u2)), "n_items": len(common),
                        "kappa": cohen_kappa([by_user[u1][i] for i in common], [by_user[u2][i] for i in common])})
    return out


def agreement(session: Session) -> dict:
    """Inter-curator agreement over overlapping reviews: Fleiss' kappa for puzzle verdicts (accept vs
    reject) and for distractor verdicts (keep vs reject), plus Cohen's kappa for each curator pair."""
    dec = _decisive(session)
    opts = _option_ratings(session, dec)
    names = {uid: name for uid, name in session.execute(select(User.id, User.name))}
    return {"puzzle": {**fleiss_kappa([Counter(r.values()) for r in dec.values()]),
                       "pairs": _pairwise(dec, names)},
            "option": {**fleiss_kappa([Counter(r.values()) for r in opts.values()]),
                       "pairs": _pairwise(opts, names)}}

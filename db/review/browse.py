"""Finding puzzles to look at outside the queue order: the puzzles matching the curate page's filter
(video, review status or "skipped", distractor kind, difficulty of the hardest distractor), which
is also the per-video view. The filter's meaning is the queue rule's (`db.review.queue_rule`,
`filter_sql`), so the list shows exactly the puzzles the filtered queue draws from, in any status."""
from __future__ import annotations

from sqlalchemy import func, select, text
from sqlalchemy.orm import Session

from db.chunks import in_chunks
from db.models import Option, Puzzle, Video
from db.models.curation import PuzzleVerdict, ReviewState
from db.models.human import HumanAnswer
from db.review.queue_rule import FILTER_STATUSES, QueueFilter, filter_sql
from mvp_core.errors import UserError

MAX_LIST = 500


def video_names(session: Session) -> dict[str, str]:
    """{video id: file name}: pages show videos by file name, never by hash."""
    return {vid: path.rsplit("/", 1)[-1] for vid, path in session.execute(select(Video.id, Video.path))}


def make_filter(video: str | None = None, status: str | None = None, kind: str | None = None,
                min_difficulty: float | None = None, max_difficulty: float | None = None) -> QueueFilter:
    """A checked queue filter (UserError, one line, on a bad part)."""
    if status is not None and status not in FILTER_STATUSES:
        raise UserError(f"status must be one of {', '.join(FILTER_STATUSES)}")
    for v in (min_difficulty, max_difficulty):
        if v is not None and not (isinstance(v, (int, float)) and not isinstance(v, bool) and 0 <= v <= 1):
            raise UserError("difficulty bounds must be numbers between 0 and 1")
    return QueueFilter(video=video or None, status=status or None, kind=kind or None,
                       min_difficulty=None if min_difficulty is None else float(min_difficulty),
                       max_difficulty=None if max_difficulty is None else float(max_difficulty))


def find_puzzles(session: Session, user_id: int, filt: QueueFilter, limit: int = MAX_LIST) -> list[dict]:
    """Puzzles matching the filter, by video file name then id: [{puzzle_id, video, status,
    n_reviews, mine (my verdict or None), answered (exact match of my answer or None),
    difficulty (the hardest distractor's)}]."""
    hardest = (select(Option.puzzle_id, func.max(Option.difficulty).label("d"))
               .where(Option.kind != "target").group_by(Option.puzzle_id).subquery())
    q = (select(Puzzle.id, Video.path, ReviewState.status, ReviewState.n_reviews, hardest.c.d)
         .join(Video, Video.id == Puzzle.video_id)
         .join(ReviewState, ReviewState.puzzle_id == Puzzle.id, isouter=True)
         .join(hardest, hardest.c.puzzle_id == Puzzle.id, isouter=True))
    cond = filter_sql(filt, "puzzles.id")
    if cond:
        params = {k: v for k, v in {"u": user_id, **filt.params()}.items() if f":{k}" in cond}
        q = q.where(text(cond.removeprefix(" AND ")).bindparams(**params))
    rows = session.execute(q.order_by(Video.path, Puzzle.id).limit(limit)).all()
    ids = [r[0] for r in rows]
    mine, answered = {}, {}
    for chunk in in_chunks(ids):
        mine.update(session.execute(select(PuzzleVerdict.puzzle_id, PuzzleVerdict.verdict).where(
            PuzzleVerdict.user_id == user_id, PuzzleVerdict.puzzle_id.in_(chunk))).all())
        answered.update(session.execute(select(HumanAnswer.puzzle_id, HumanAnswer.exact).where(
            HumanAnswer.user_id == user_id, HumanAnswer.puzzle_id.in_(chunk))).all())
    return [{"puzzle_id": pid, "video": path.rsplit("/", 1)[-1], "status": st or "pending",
             "n_reviews": n or 0, "mine": mine.get(pid), "answered": answered.get(pid),
             "difficulty": None if d is None else round(float(d), 3)}
            for pid, path, st, n, d in rows]


def option_kinds(session: Session) -> list[str]:
    """The distractor kinds present in the store (for the filter's choices)."""
    return sorted(session.scalars(select(Option.kind).where(Option.kind != "target").distinct()))

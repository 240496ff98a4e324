"""Finding puzzles to look at outside the queue order: by video, review status, distractor kind and
difficulty (the curate page's filter and its per-video view). The queue rule itself stays in
`db.review.queue`; this only lists puzzles."""
from __future__ import annotations

from sqlalchemy import exists, func, select
from sqlalchemy.orm import Session

from db.models import Option, Puzzle, Video
from db.models.curation import STATUSES, PuzzleVerdict, ReviewState
from db.models.human import HumanAnswer
from mvp_core.errors import UserError

MAX_LIST = 500


def video_names(session: Session) -> dict[str, str]:
    """{video id: file name}: pages show videos by file name, never by hash."""
    return {vid: path.rsplit("/", 1)[-1] for vid, path in session.execute(select(Video.id, Video.path))}


def find_puzzles(session: Session, user_id: int, video: str | None = None, status: str | None = None,
                 kind: str | None = None, min_difficulty: float | None = None,
                 max_difficulty: float | None = None, limit: int = MAX_LIST) -> list[dict]:
    """Puzzles matching every given filter, by video file name then id: [{puzzle_id, video, status,
    n_reviews, mine (my verdict or None), answered (exact match of my answer or None),
    difficulty (the hardest distractor's)}]. `kind`: some distractor has that kind; difficulty
    bounds apply to the hardest distractor."""
    if status is not None and status not in STATUSES:
        raise UserError(f"status must be one of {', '.join(STATUSES)}")
    for v in (min_difficulty, max_difficulty):
        if v is not None and not (isinstance(v, (int, float)) and 0 <= v <= 1):
            raise UserError("difficulty bounds must be numbers between 0 and 1")
    hardest = (select(Option.puzzle_id, func.max(Option.difficulty).label("d"))
               .where(Option.kind != "target").group_by(Option.puzzle_id).subquery())
    q = (select(Puzzle.id, Video.path, ReviewState.status, ReviewState.n_reviews, hardest.c.d)
         .join(Video, Video.id == Puzzle.video_id)
         .join(ReviewState, ReviewState.puzzle_id == Puzzle.id, isouter=True)
         .join(hardest, hardest.c.puzzle_id == Puzzle.id, isouter=True))
    if video:
        q = q.where(Puzzle.video_id == video)
    if status:
        q = q.where(func.coalesce(ReviewState.status, "pending") == status)
    if kind:
        q = q.where(exists().where(Option.puzzle_id == Puzzle.id, Option.kind == kind))
    if min_difficulty is not None:
        q = q.where(hardest.c.d >= min_difficulty)
    if max_difficulty is not None:
        q = q.where(hardest.c.d <= max_difficulty)
    rows = session.execute(q.order_by(Video.path, Puzzle.id).limit(limit)).all()
    ids = [r[0] for r in rows]
    mine, answered = {}, {}
    for i in range(0, len(ids), 500):
        chunk = ids[i:i + 500]
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

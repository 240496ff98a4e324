"""Who may judge which puzzle: the rule the curate API checks before any verdict or option verdict
(docs/store.md, "Leases and revisits").

A curator may judge a puzzle that is leased to them (`next_puzzle` handed it out, or `undo_last` gave
it back), and may revisit a puzzle they already judged (the curate page's <- / -> and undo: changing
one's own verdict adds no review). A lease that expired still counts while no other curator holds a
live lease on the puzzle, so a slow curator does not lose the puzzle in front of them. Anything else
(a deep link to someone else's puzzle, a guessed id) is refused: without this a k = 1 puzzle could be
reviewed twice and turn "disputed"."""
from __future__ import annotations

from sqlalchemy import exists, select
from sqlalchemy.orm import Session

from db.models import Puzzle, utcnow
from db.models.curation import Lease, PuzzleVerdict, User
from db.review.queue import aware
from mvp_core.errors import UserError


def may_judge(session: Session, user_id: int, puzzle_id: str) -> bool:
    if session.scalar(select(exists().where(PuzzleVerdict.puzzle_id == puzzle_id,
                                            PuzzleVerdict.user_id == user_id))):
        return True                                   # a revisit of my own review
    mine = session.scalar(select(Lease.expires_at).where(Lease.puzzle_id == puzzle_id,
                                                         Lease.user_id == user_id))
    if mine is None:
        return False
    now = utcnow()
    if aware(mine) > now:
        return True
    return not session.scalar(select(exists().where(Lease.puzzle_id == puzzle_id, Lease.user_id != user_id,
                                                    Lease.expires_at > now)))


def check_may_judge(session: Session, user_id: int, puzzle_id: str) -> None:
    """UserError (one line) unless `may_judge`."""
    if session.get(Puzzle, puzzle_id) is None:
        raise UserError(f"no puzzle {puzzle_id!r}")
    if not may_judge(session, user_id, puzzle_id):
        raise _not_assigned(puzzle_id)


def _not_assigned(puzzle_id: str) -> UserError:
    return UserError(f"puzzle {puzzle_id!r} is not assigned to you: judge the puzzles the queue gives "
                     "you (→ or reload), or ones you judged before")


BULK_JUDGE_ROLES = ("curator", "admin")   # who may accept or reject puzzles in bulk (the gallery)


def check_may_judge_all(session: Session, user: User, puzzle_ids: list[str]) -> None:
    """The rule for a bulk verdict: an admin may judge any puzzle; a curator only the ones
    `may_judge` allows them one by one (leased to them, or judged before); anyone else none.
    UserError (one line) naming the first refused puzzle."""
    if user.role not in BULK_JUDGE_ROLES:
        raise UserError(f"only curators and admins may accept or reject puzzles; {user.name!r} is a {user.role}")
    if user.role == "admin":
        return
    refused = next((p for p in puzzle_ids if not may_judge(session, user.id, p)), None)
    if refused is not None:
        raise _not_assigned(refused)

"""Tags and comments on a puzzle or on one of its distractors (docs/store.md, "Gallery"). Curators
and admins write them; everyone who may read the gallery reads them. Searchable through the gallery
(`db.review.gallery`, `q` and `tag`); a set's export carries each puzzle's tags."""
from __future__ import annotations

import re

from sqlalchemy import delete, func, select
from sqlalchemy.orm import Session

from db.chunks import in_chunks
from db.models import Option, Puzzle, utcnow
from db.models.curation import User
from db.models.gallery import PuzzleComment, PuzzleTag
from db.review.bulk_rows import among, id_chunks, insert_rows
from db.txn import run_txn
from mvp_core.errors import UserError

TAG_ROLES = ("curator", "admin")      # who may tag and comment
TAG_RE = re.compile(r"[a-z0-9][a-z0-9 _.:-]{0,39}")
MAX_COMMENT = 2000


def check_may_tag(session: Session, user_id: int) -> User:
    user = session.get(User, user_id)
    if user is None:
        raise UserError(f"no user with id {user_id}")
    if user.role not in TAG_ROLES:
        raise UserError(f"only curators and admins may tag or comment; {user.name!r} is a {user.role}")
    return user


def clean_tag(tag) -> str:
    """A tag as stored: trimmed, lower case; UserError (one line) unless 1-40 letters, digits, space, _ . : -."""
    t = tag.strip().lower() if isinstance(tag, str) else ""
    if not TAG_RE.fullmatch(t):
        raise UserError(f"a tag is 1 to 40 letters, digits, spaces or _ . : - (starting with a letter "
                        f"or digit), not {str(tag)[:60]!r}")
    return t


def check_label(session: Session, puzzle_id: str, label: str) -> str:
    """'' (the puzzle) or the label of one of the puzzle's distractors; UserError otherwise."""
    if session.get(Puzzle, puzzle_id) is None:
        raise UserError(f"no puzzle {puzzle_id!r}")
    if not label:
        return ""
    kind = session.scalar(select(Option.kind).where(Option.puzzle_id == puzzle_id, Option.label == label))
    if kind is None or kind == "target":
        raise UserError(f"puzzle {puzzle_id} has no distractor {str(label)[:8]!r}")
    return label


def insert_tags(session: Session, user_id: int, ids: list[str], tag: str, batch_id: int | None = None) -> list[str]:
    """Tag the puzzles that lack the tag (in the caller's transaction); returns those tagged now."""
    t = utcnow()
    new: list[str] = []
    for chunk in id_chunks(session, ids):
        have = set(session.scalars(select(PuzzleTag.puzzle_id).where(
            among(session, PuzzleTag.puzzle_id, chunk), PuzzleTag.label == "", PuzzleTag.tag == tag)))
        new += [p for p in chunk if p not in have]
    insert_rows(session, PuzzleTag.__table__, [{"puzzle_id": p, "label": "", "tag": tag, "user_id": user_id,
                                                "batch_id": batch_id, "created_at": t} for p in new])
    return new


def add_tag(session: Session, user_id: int, puzzle_id: str, tag: str, label: str = "") -> dict:
    """Tag one puzzle (`label` "") or one of its distractors; tagging twice is one tag."""
    tag = clean_tag(tag)

    def txn():
        check_may_tag(session, user_id)
        lab = check_label(session, puzzle_id, label)
        if session.scalar(select(PuzzleTag.id).where(PuzzleTag.puzzle_id == puzzle_id, PuzzleTag.label == lab,
                                                     PuzzleTag.tag == tag)) is None:
            session.add(PuzzleTag(puzzle_id=puzzle_id, label=lab, tag=tag, user_id=user_id))
        return {"puzzle_id": puzzle_id, "label": lab, "tag": tag}
    return run_txn(session, txn)


def remove_tag(session: Session, user_id: int, puzzle_id: str, tag: str, label: str = "") -> bool:
    tag = clean_tag(tag)

    def txn():
        check_may_tag(session, user_id)
        res = session.execute(delete(PuzzleTag).where(PuzzleTag.puzzle_id == puzzle_id,
                                                      PuzzleTag.label == (label or ""), PuzzleTag.tag == tag))
        return bool(res.rowcount)
    return run_txn(session, txn)


def add_comment(session: Session, user_id: int, puzzle_id: str, text: str, label: str = "") -> dict:
    """A comment on a puzzle or one of its distractors: 1 to 2000 characters."""
    body = text.strip() if isinstance(text, str) else ""
    if not 0 < len(body) <= MAX_COMMENT:
        raise UserError(f"a comment is 1 to {MAX_COMMENT} characters")

    def txn():
        check_may_tag(session, user_id)
        lab = check_label(session, puzzle_id, label)
        session.add(PuzzleComment(puzzle_id=puzzle_id, label=lab, user_id=user_id, text=body))
        return {"puzzle_id": puzzle_id, "label": lab, "text": body}
    return run_txn(session, txn)


def notes_of(session: Session, puzzle_id: str) -> dict:
    """{"tags": [{tag, label}], "comments": [{user, label, text, created_at}]} of one puzzle, oldest first."""
    tags = [{"tag": t, "label": lab} for t, lab in session.execute(
        select(PuzzleTag.tag, PuzzleTag.label).where(PuzzleTag.puzzle_id == puzzle_id)
        .order_by(PuzzleTag.label, PuzzleTag.tag))]
    comments = [{"user": u, "label": lab, "text": txt, "created_at": at} for u, lab, txt, at in session.execute(
        select(User.name, PuzzleComment.label, PuzzleComment.text, PuzzleComment.created_at)
        .join(User, User.id == PuzzleComment.user_id).where(PuzzleComment.puzzle_id == puzzle_id)
        .order_by(PuzzleComment.id))]
    return {"tags": tags, "comments": comments}


def tags_of(session: Session, ids: list[str]) -> dict[str, list[dict]]:
    """{puzzle id: [{tag, label}]} (label "" = the puzzle itself), by tag."""
    out: dict[str, list[dict]] = {}
    for chunk in in_chunks(ids):
        for pid, label, tag in session.execute(
                select(PuzzleTag.puzzle_id, PuzzleTag.label, PuzzleTag.tag)
                .where(PuzzleTag.puzzle_id.in_(chunk)).order_by(PuzzleTag.tag, PuzzleTag.label)):
            out.setdefault(pid, []).append({"tag": tag, "label": label})
    return out


def comment_counts(session: Session, ids: list[str]) -> dict[str, int]:
    out: dict[str, int] = {}
    for chunk in in_chunks(ids):
        out.update(session.execute(select(PuzzleComment.puzzle_id, func.count())
                                   .where(PuzzleComment.puzzle_id.in_(chunk))
                                   .group_by(PuzzleComment.puzzle_id)).all())
    return out


def puzzle_tags(session: Session, ids: list[str]) -> dict[str, list[str]]:
    """{puzzle id: its own tags (not its distractors'), sorted}: what an export carries."""
    out: dict[str, list[str]] = {}
    for chunk in in_chunks(ids):
        for pid, tag in session.execute(select(PuzzleTag.puzzle_id, PuzzleTag.tag).where(
                PuzzleTag.puzzle_id.in_(chunk), PuzzleTag.label == "").order_by(PuzzleTag.tag)):
            out.setdefault(pid, []).append(tag)
    return out


def all_tags(session: Session, limit: int = 200) -> list[str]:
    """The distinct tags in the store (the gallery's filter choices), alphabetically."""
    return list(session.scalars(select(PuzzleTag.tag).distinct().order_by(PuzzleTag.tag).limit(limit)))

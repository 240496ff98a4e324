"""The gallery's query layer: a filtered, sorted page of puzzles with what each card shows, the
number that match, the count per status, and the ids of all that match (for a bulk action), all by
SQL on both engines, never by loading every puzzle (docs/store.md, "Gallery"); and views of the
gallery saved by name per user.

A query is a `GalleryQuery` (validated, one line per bad field); the browser keeps it in the page's
URL, so a view opens by its address as well as by its saved name."""
from __future__ import annotations

import json
from collections import Counter
from typing import Literal

from pydantic import Field, ValidationError, field_validator
from sqlalchemy import and_, exists, func, select, union
from sqlalchemy.orm import Session

from db.chunks import in_chunks
from db.models import Option, Puzzle, Rollout, Video
from db.models.curation import STATUSES, PuzzleVerdict, ReviewState, User
from db.models.gallery import PuzzleComment, PuzzleTag, SavedView
from db.puzzles.audit_results import CHOICES as AUDIT_CHOICES
from db.puzzles.audit_results import check_flag, flag_condition, solvers_of
from db.review.tags import comment_counts, tags_of
from db.review.kappa import item_agreement
from db.review.stats import DECISIVE
from db.txn import run_txn
from mvp_core.config import DocumentedConfig
from mvp_core.errors import UserError
from mvp_core.puzzle import Puzzle as Puzzle_

MAX_MATCH = 100_000          # "all that match" selects at most this many puzzles
MODEL_RIGHT = 0.5            # a model "got it right" when its mean exact match on the puzzle is at least this
# each order is an index of its table, so the first page is a range scan, not a sort of every puzzle
SORTS = {"id": (), "video": (Puzzle.video_id,), "status": (ReviewState.status,), "reviews": (ReviewState.n_reviews,)}


class GalleryQuery(DocumentedConfig):
    """Which puzzles the gallery shows and in which order."""
    video: list[str] = Field(default_factory=list, max_length=200, description="video ids (any of them)")
    status: list[Literal["pending", "accepted", "rejected", "disputed"]] = Field(
        default_factory=list, description="review statuses (any of them)")
    curator: str = Field("", max_length=64, description="a curator's name: puzzles they accepted or rejected")
    kind: list[str] = Field(default_factory=list, max_length=20, description="distractor kinds (a puzzle with any)")
    tag: list[str] = Field(default_factory=list, max_length=20, description="tags (a puzzle with any)")
    run: str = Field("", max_length=64, description="a run whose stored answers `model` reads")
    model: Literal["", "right", "wrong"] = Field(
        "", description="the run's model got the puzzle right (mean exact >= 0.5) or wrong")
    q: str = Field("", max_length=100, description="search: a puzzle id's start, part of a video's file "
                                                   "name, a tag, or words of a comment")
    sort: Literal["id", "video", "status", "reviews"] = Field(
        "id", description="the order of the cards (video: by video id, so a video's puzzles come together)")
    desc: bool = Field(False, description="descending order")
    offset: int = Field(0, ge=0, le=MAX_MATCH, description="cards skipped (the page's start)")
    limit: int = Field(48, ge=1, le=200, description="cards per page")
    audit: str = Field("", max_length=40, description="the shortcut audit per puzzle: any (a shortcut solver "
                                                      "solves it), none, unaudited, or one solver's name")

    @field_validator("audit")
    @classmethod
    def _audit_flag(cls, v: str) -> str:
        try:
            return check_flag(v)
        except UserError:
            raise ValueError(f"must be one of {', '.join(AUDIT_CHOICES)}") from None


def parse_query(raw: dict | None) -> GalleryQuery:
    """A GalleryQuery from what a page or a saved view sent; UserError (one line) on a bad field."""
    if raw is not None and not isinstance(raw, dict):
        raise UserError("the gallery query must be an object")
    try:
        return GalleryQuery.model_validate(raw or {})
    except ValidationError as e:
        raise GalleryQuery.user_error(e) from None


def _conditions(q: GalleryQuery, dialect: str) -> list:
    """The filters as conditions on a review_state row (one per puzzle: the migrations' trigger adds
    it). Each is an IN over an index range of its own table, or, for a filter most puzzles pass
    (distractor kind, the model's result on SQLite), a lookup per row, so the page stops at its last
    card instead of gathering every match first (docs/BENCHMARKS.md, "Gallery")."""
    pid = ReviewState.puzzle_id
    conds = []
    if q.video:
        conds.append(Puzzle.video_id.in_(q.video))
    if q.status:
        conds.append(ReviewState.status.in_(q.status))
    if q.curator:
        who = select(User.id).where(User.name == q.curator).scalar_subquery()
        conds.append(pid.in_(select(PuzzleVerdict.puzzle_id).where(PuzzleVerdict.user_id == who,
                                                                   PuzzleVerdict.verdict.in_(DECISIVE))))
    if q.kind:
        # EXISTS: PostgreSQL plans it as the same semi-join as IN; SQLite probes the (kind, puzzle_id) index
        conds.append(exists().where(Option.kind.in_(q.kind), Option.puzzle_id == pid))
    if q.tag:
        conds.append(pid.in_(select(PuzzleTag.puzzle_id).where(PuzzleTag.tag.in_([t.lower() for t in q.tag]))))
    if q.run and q.model:
        def right(mean):     # no answer: a NULL mean, neither right nor wrong
            return mean >= MODEL_RIGHT if q.model == "right" else mean < MODEL_RIGHT
        if dialect == "sqlite":
            # the mean per row from the (run_id, puzzle_id, exact) index; PostgreSQL would run this
            # subquery once per row, so there the grouped set is joined as a whole
            conds.append(right(select(func.avg(Rollout.exact)).where(
                Rollout.run_id == q.run, Rollout.puzzle_id == pid).scalar_subquery()))
        else:
            conds.append(pid.in_(select(Rollout.puzzle_id).where(Rollout.run_id == q.run)
                                 .group_by(Rollout.puzzle_id).having(right(func.avg(Rollout.exact)))))
    if q.audit:
        conds.append(flag_condition(q.audit, pid))
    if q.q.strip():
        term = q.q.strip().lower()
        videos = select(Video.id).where(func.lower(Video.path).contains(term, autoescape=True))
        # one IN over the union: each part runs once, not once per puzzle as an OR of them would
        conds.append(pid.in_(union(
            select(Puzzle.id).where(Puzzle.id.startswith(term, autoescape=True)),
            select(Puzzle.id).where(Puzzle.video_id.in_(videos)),
            select(PuzzleTag.puzzle_id).where(PuzzleTag.tag == term),
            select(PuzzleComment.puzzle_id).where(func.lower(PuzzleComment.text).contains(term, autoescape=True)))))
    return conds


def _filtered(session: Session, cols, q: GalleryQuery, puzzles: bool = True):
    """SELECT cols over the review_state rows the query matches, joined to puzzles when `puzzles` or a
    filter reads them (the count per status of an unfiltered or status-only query needs no join)."""
    stmt = select(*cols).select_from(ReviewState)
    if puzzles or q.video:
        stmt = stmt.join(Puzzle, Puzzle.id == ReviewState.puzzle_id)
    conds = _conditions(q, session.get_bind().dialect.name)
    return stmt.where(and_(*conds)) if conds else stmt


def _order(q: GalleryQuery):
    keys = [*SORTS[q.sort], ReviewState.puzzle_id]
    return [k.desc() if q.desc else k.asc() for k in keys]


def gallery_page(session: Session, q: GalleryQuery) -> dict:
    """{"rows": the page's cards, "total": how many match, "by_status": {status: n} of those that match}.
    A card: puzzle_id, video_id, video (file name), status, n_accept, n_reject, agreement (share of
    agreeing curator pairs, None under two verdicts), before / after (context frame uris), gap (how
    many frames are masked), tags [{tag, label}], n_comments, and model_exact (the run's mean exact
    match, None without a run or an answer), and audit (the shortcut solvers that solve it, None when
    it has not been audited)."""
    rows = session.execute(
        _filtered(session, [ReviewState.puzzle_id, Puzzle.video_id, ReviewState.status, ReviewState.n_reviews,
                   ReviewState.n_accept, Puzzle.record_json], q)
        .order_by(*_order(q)).offset(q.offset).limit(q.limit)).all()
    by_status = dict(session.execute(
        _filtered(session, [ReviewState.status, func.count()], q, puzzles=False).group_by(ReviewState.status)).all())
    names = dict(session.execute(select(Video.id, Video.path).where(Video.id.in_({r[1] for r in rows}))).all())
    ids = [r[0] for r in rows]
    tags, n_comments = tags_of(session, ids), comment_counts(session, ids)
    exact = model_exact(session, q.run, ids) if q.run else {}
    audited = solvers_of(session, ids)
    out = []
    for pid, vid, status, n_rev, n_acc, record in rows:
        p = Puzzle_.from_dict(json.loads(record))
        n_acc, n_rej = n_acc or 0, (n_rev or 0) - (n_acc or 0)
        out.append({"puzzle_id": pid, "video_id": vid, "video": names.get(vid, vid).rsplit("/", 1)[-1],
                    "status": status, "n_accept": n_acc, "n_reject": n_rej,
                    "agreement": item_agreement(Counter({"accept": n_acc, "reject": n_rej})),
                    "before": [f.uri for f in p.context_before],
                    "after": [f.uri for f in p.context_after], "gap": p.mask.length,
                    "tags": tags.get(pid, []), "n_comments": n_comments.get(pid, 0),
                    "model_exact": exact.get(pid), "audit": audited.get(pid)})
    return {"rows": out, "total": sum(by_status.values()),
            "by_status": {s: by_status.get(s, 0) for s in STATUSES}}


def matching_ids(session: Session, q: GalleryQuery, limit: int = MAX_MATCH) -> list[str]:
    """The ids of every puzzle the query matches, in its order (what "all that match" acts on)."""
    return list(session.scalars(_filtered(session, [ReviewState.puzzle_id], q).order_by(*_order(q)).limit(limit)))


def model_exact(session: Session, run: str, ids: list[str]) -> dict[str, float]:
    """{puzzle id: the run's mean exact match over its stored answers on it}."""
    out: dict[str, float] = {}
    for chunk in in_chunks(ids):
        out.update((pid, float(v)) for pid, v in session.execute(
            select(Rollout.puzzle_id, func.avg(Rollout.exact))
            .where(Rollout.run_id == run, Rollout.puzzle_id.in_(chunk)).group_by(Rollout.puzzle_id)))
    return out


# ---- saved views ------------------------------------------------------------------------------

VIEW_FIELDS = ("video", "status", "curator", "kind", "tag", "run", "model", "q", "sort", "desc", "audit")


def _view_name(name) -> str:
    name = (name or "").strip() if isinstance(name, str) else ""
    if not 0 < len(name) <= 80:
        raise UserError("a view's name must be 1 to 80 characters")
    return name


def save_view(session: Session, user_id: int, name: str, q: GalleryQuery) -> dict:
    """Save (or replace) this user's view `name`: the query's filters and sort, not its page."""
    name = _view_name(name)
    query = {k: v for k, v in q.model_dump().items() if k in VIEW_FIELDS}

    def txn():
        row = session.scalar(select(SavedView).where(SavedView.user_id == user_id, SavedView.name == name))
        if row is None:
            session.add(SavedView(user_id=user_id, name=name, query=query))
        else:
            row.query = query
        session.flush()
        return {"name": name, "query": query}
    return run_txn(session, txn)


def list_views(session: Session, user_id: int) -> list[dict]:
    return [{"name": n, "query": qy} for n, qy in session.execute(
        select(SavedView.name, SavedView.query).where(SavedView.user_id == user_id).order_by(SavedView.name))]


def get_view(session: Session, user_id: int, name: str) -> GalleryQuery:
    """The saved view as a query; UserError when this user has no view of that name."""
    name = _view_name(name)
    query = session.scalar(select(SavedView.query).where(SavedView.user_id == user_id, SavedView.name == name))
    if query is None:
        raise UserError(f"you have no saved view named {name!r}")
    return parse_query(query)


def delete_view(session: Session, user_id: int, name: str) -> None:
    name = _view_name(name)

    def txn():
        row = session.scalar(select(SavedView).where(SavedView.user_id == user_id, SavedView.name == name))
        if row is None:
            raise UserError(f"you have no saved view named {name!r}")
        session.delete(row)
    run_txn(session, txn)

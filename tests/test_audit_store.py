"""The shortcut audit per puzzle in the store, on both engines (db/puzzles/audit_results.py): an
audit run replaces each covered puzzle's results in one transaction, the gallery's card says which
shortcut solvers solve a puzzle (or that it was not audited) and its audit flag filters by it."""
from __future__ import annotations

import pytest
from sqlalchemy import func, select
from sqlalchemy.exc import IntegrityError

from db.models.audit import PuzzleAudit
from db.puzzles.audit_results import solvers_of, store_results
from db.review import gallery
from mvp_core.errors import UserError
from mvp_core.puzzle import Puzzle
from mvp_core.synth.audit import SHORTCUTS, PuzzleResult, audit_puzzles
from mvp_core.video.frames import FrameStore


def _page(s, **q):
    return gallery.gallery_page(s, gallery.parse_query({"limit": 200, **q}))


def _ids(page) -> set[str]:
    return {r["puzzle_id"] for r in page["rows"]}


def _rows(s) -> int:
    return s.scalar(select(func.count()).select_from(PuzzleAudit))


def test_audit_per_puzzle_stored_shown_and_filtered(store_db):
    puzzles = [Puzzle.from_dict(r) for r in store_db.records]
    ids = {p.id for p in puzzles}
    report, results = audit_puzzles(puzzles, FrameStore(store_db.data_dir).load, check_guard=False)
    # the per-puzzle results are the report's own numbers: their mean is the solver's exact match
    for name in SHORTCUTS:
        mine = [r.exact for r in results if r.solver == name]
        assert len(mine) == len(puzzles)
        assert sum(mine) / len(mine) == pytest.approx(report["groups"]["all"]["solvers"][name]["exact"])
    with store_db.Session() as s:
        first = _page(s)
        assert all(r["audit"] is None for r in first["rows"])                  # not audited yet
        assert _ids(_page(s, audit="unaudited")) == ids and _page(s, audit="any")["total"] == 0
        assert store_results(s, results) == len(puzzles)
        assert _rows(s) == len(results)
        solved = {p: [r.solver for r in results if r.puzzle_id == p and r.solver in SHORTCUTS and r.exact >= 1]
                  for p in ids}
        cards = {r["puzzle_id"]: r["audit"] for r in _page(s)["rows"]}
        assert cards == {p: sorted(v, key=SHORTCUTS.index) for p, v in solved.items()}
        any_ = _ids(_page(s, audit="any"))
        assert any_ == {p for p, v in solved.items() if v}
        assert _ids(_page(s, audit="none")) == ids - any_
        assert _page(s, audit="unaudited")["total"] == 0
        for name in SHORTCUTS:
            assert _ids(_page(s, audit=name)) == {p for p, v in solved.items() if name in v}


def test_audit_rerun_replaces_only_the_covered_puzzles(store_db):
    ids = sorted(r["id"] for r in store_db.records)
    a, b, rest = ids[0], ids[1], ids[2:]
    first = [PuzzleResult(p, n, 0.0, 0.1) for p in ids for n in ("random", *SHORTCUTS)]
    with store_db.Session() as s:
        store_results(s, first)
        assert _page(s, audit="none")["total"] == len(ids) and _page(s, audit="any")["total"] == 0
        # a run that fails half way (here: one (puzzle, solver) twice) loses none of the stored results
        with pytest.raises(IntegrityError):
            store_results(s, [PuzzleResult(a, "histogram", 1.0, 1.0)] * 2)
        s.rollback()
        assert _rows(s) == len(first) and _page(s, audit="none")["total"] == len(ids)
        # a second run over two puzzles only, with fewer solvers: those two are replaced, the rest kept
        store_results(s, [PuzzleResult(a, "boundary", 1.0, 1.0), PuzzleResult(a, "random", 1.0, 1.0),
                          PuzzleResult(b, "boundary", 0.0, 0.5)])
        assert _rows(s) == 3 + len(rest) * (1 + len(SHORTCUTS))
        assert solvers_of(s, [a, b]) == {a: ["boundary"], b: []}    # "random" solving is luck, not a shortcut
        assert _ids(_page(s, audit="any")) == {a} and _ids(_page(s, audit="boundary")) == {a}
        assert _ids(_page(s, audit="histogram")) == set()
        assert _ids(_page(s, audit="none")) == set(ids) - {a}
        # the flag combines with the other filters and saved views keep it
        assert _ids(_page(s, audit="any", status=["accepted"])) == set()
        from db.users.accounts import add_user
        uid = add_user(s, "vera", "curator", "password-vera")[0].id
        s.commit()
        gallery.save_view(s, uid, "shortcuts", gallery.parse_query({"audit": "any"}))
        assert gallery.get_view(s, uid, "shortcuts").audit == "any"


def test_audit_flag_refused_with_one_line(store_db):
    with pytest.raises(UserError) as e:
        gallery.parse_query({"audit": "oracle"})
    assert "\n" not in str(e.value) and str(e.value).startswith("audit: must be one of any, none, unaudited")
    with store_db.Session() as s:
        assert _rows(s) == 0


def test_audit_summary_follows_rows_made_after_the_audit(store_db):
    """review_state.audit_shortcuts (what any / none / unaudited read) is right for a puzzle whose queue
    row is made after its audit: by sync_queue and by a verdict on a puzzle without one."""
    from sqlalchemy import delete

    from db.models.curation import ReviewState
    from db.review import sync_queue
    ids = sorted(r["id"] for r in store_db.records)
    solved, plain, never = ids[0], ids[1], ids[2]
    with store_db.Session() as s:
        store_results(s, [PuzzleResult(solved, "boundary", 1.0, 1.0), PuzzleResult(solved, "histogram", 1.0, 1.0),
                          PuzzleResult(plain, "boundary", 0.0, 0.2)])
        s.commit()
        before = {p: s.get(ReviewState, p).audit_shortcuts for p in (solved, plain, never)}
        assert before == {solved: 2, plain: 0, never: None}
        s.execute(delete(ReviewState).where(ReviewState.puzzle_id.in_([solved, plain, never])))
        s.commit()
        assert sync_queue(s) == 3
        s.commit()
        s.expire_all()
        assert {p: s.get(ReviewState, p).audit_shortcuts for p in before} == before
        assert solved in _ids(_page(s, audit="any")) and plain in _ids(_page(s, audit="none"))
        assert never in _ids(_page(s, audit="unaudited"))


def test_migration_0012_sums_the_audits_already_stored(tmp_path, store_puzzles):
    """A database audited before the summary column existed gets it filled on upgrade."""
    from datetime import datetime, timezone

    from sqlalchemy.orm import sessionmaker

    from db.engine import make_engine, upgrade
    from db.sets.importer import store_records
    _, records = store_puzzles
    eng = make_engine(f"sqlite:///{tmp_path / 'old.sqlite'}")
    upgrade(eng, "0011")
    Session = sessionmaker(eng, expire_on_commit=False)
    ids, when = sorted(r["id"] for r in records), datetime(2026, 1, 1, tzinfo=timezone.utc)
    with Session() as s:
        store_records(s, records)
        s.execute(PuzzleAudit.__table__.insert(), [
            {"puzzle_id": ids[0], "solver": "boundary", "exact": 1.0, "reward": 1.0, "audited_at": when},
            {"puzzle_id": ids[0], "solver": "random", "exact": 1.0, "reward": 1.0, "audited_at": when},
            {"puzzle_id": ids[1], "solver": "random", "exact": 1.0, "reward": 1.0, "audited_at": when}])
        s.commit()
    upgrade(eng)
    with Session() as s:
        assert _ids(_page(s, audit="any")) == {ids[0]}
        assert _ids(_page(s, audit="none")) == {ids[1]}             # random solving it is luck
        assert _ids(_page(s, audit="unaudited")) == set(ids[2:])
    eng.dispose()

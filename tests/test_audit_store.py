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

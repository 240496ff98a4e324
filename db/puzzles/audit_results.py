"""The shortcut audit per puzzle in the store (docs/store.md, "Audit per puzzle"): an audit run
against the store replaces, for each puzzle it covered, that puzzle's previous results in one
transaction; the gallery reads which shortcut solvers solve a puzzle and filters by it.

A puzzle with no row has not been audited; "solved" means the solver's answer was exact. The
"random" solver is stored (it measures chance) but never counts as a shortcut. How many shortcut
solvers solve a puzzle is kept on its review_state row (audit_shortcuts, NULL: not audited) in the same
transaction, so the gallery's any / none / unaudited flags read a column of the rows it scans."""
from __future__ import annotations

from collections.abc import Sequence

from sqlalchemy import and_, case, delete, exists, func, insert, null, select, update
from sqlalchemy.orm import Session

from db.chunks import in_chunks
from db.models import utcnow
from db.models.audit import PuzzleAudit
from db.models.curation import ReviewState
from db.txn import run_txn
from mvp_core.errors import UserError
from mvp_core.synth.audit import SHORTCUTS, PuzzleResult

# the gallery's "audit flag" choices besides one solver's name
FLAGS = {"any": "a shortcut solver solves it", "none": "no shortcut solver solves it",
         "unaudited": "not audited"}
CHOICES = (*FLAGS, *SHORTCUTS)


def store_results(session: Session, results: Sequence[PuzzleResult]) -> int:
    """Replace the stored results of every puzzle in `results` with these, in one transaction (the
    old rows of those puzzles deleted, the new ones inserted as one executemany); returns how many
    puzzles. Puzzles the run did not cover keep theirs."""
    ids = sorted({r.puzzle_id for r in results})
    at = utcnow()
    rows = [{"puzzle_id": r.puzzle_id, "solver": r.solver, "exact": float(r.exact), "reward": float(r.reward),
             "audited_at": at} for r in results]

    def txn():
        for chunk in in_chunks(ids):
            session.execute(delete(PuzzleAudit).where(PuzzleAudit.puzzle_id.in_(chunk)))
        if rows:
            session.execute(insert(PuzzleAudit), rows)
        for chunk in in_chunks(ids):
            session.execute(summary_update(chunk))
        return len(ids)
    return run_txn(session, txn)


def _solving(solvers: Sequence[str]):
    """The audit rows in which one of `solvers` answered exactly."""
    return and_(PuzzleAudit.solver.in_(solvers), PuzzleAudit.exact >= 1.0)


def _solved(solvers: Sequence[str]):
    return select(PuzzleAudit.puzzle_id).where(_solving(solvers))


def summary_of(puzzle_id):
    """review_state.audit_shortcuts of the puzzle `puzzle_id` (a column): how many shortcut solvers
    solve it, NULL when it has no audit row."""
    solving = select(func.count()).where(PuzzleAudit.puzzle_id == puzzle_id, _solving(SHORTCUTS)).scalar_subquery()
    return case((exists().where(PuzzleAudit.puzzle_id == puzzle_id), solving), else_=null())


def summary_update(ids: Sequence[str] | None = None):
    """UPDATE review_state.audit_shortcuts from puzzle_audit for the puzzles `ids` (every row when None:
    migration 0012)."""
    rs = ReviewState
    stmt = update(rs).values(audit_shortcuts=summary_of(rs.puzzle_id))
    return (stmt.where(rs.puzzle_id.in_(ids)) if ids is not None else stmt) \
        .execution_options(synchronize_session=False)


def check_flag(flag: str) -> str:
    """'' (no filter), one of FLAGS or a shortcut solver's name; UserError (one line) otherwise."""
    if flag and flag not in FLAGS and flag not in SHORTCUTS:
        raise UserError(f"audit flag must be one of {', '.join(CHOICES)}, not {flag[:40]!r}")
    return flag


def flag_condition(flag: str, puzzle_id):
    """The audit flag as one condition on a query over review_state (puzzle_id its puzzle id column):
    any / none / unaudited read the review_state row's audit_shortcuts, "solved by" one solver is an IN
    over an index range of puzzle_audit (few puzzles; docs/BENCHMARKS.md, "Audit per puzzle")."""
    n = ReviewState.audit_shortcuts
    if flag == "any":
        return n > 0
    if flag == "none":
        return n == 0
    if flag == "unaudited":
        return n.is_(None)
    return puzzle_id.in_(_solved([check_flag(flag)]))


def solvers_of(session: Session, ids: Sequence[str]) -> dict[str, list[str]]:
    """{puzzle id: the shortcut solvers that solve it, in SHORTCUTS order} for the audited puzzles
    among `ids` (an audited puzzle no shortcut solves maps to []; one not audited is absent)."""
    out: dict[str, list[str]] = {}
    for chunk in in_chunks(list(ids)):
        for pid, solver, exact in session.execute(
                select(PuzzleAudit.puzzle_id, PuzzleAudit.solver, PuzzleAudit.exact)
                .where(PuzzleAudit.puzzle_id.in_(chunk))):
            have = out.setdefault(pid, [])
            if solver in SHORTCUTS and exact >= 1.0:
                have.append(solver)
    return {pid: sorted(v, key=SHORTCUTS.index) for pid, v in out.items()}

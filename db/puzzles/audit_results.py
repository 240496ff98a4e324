"""The shortcut audit per puzzle in the store (docs/store.md, "Audit per puzzle"): an audit run
against the store replaces, for each puzzle it covered, that puzzle's previous results in one
transaction; the gallery reads which shortcut solvers solve a puzzle and filters by it.

A puzzle with no row has not been audited; "solved" means the solver's answer was exact. The
"random" solver is stored (it measures chance) but never counts as a shortcut."""
from __future__ import annotations

from collections.abc import Sequence

from sqlalchemy import and_, delete, exists, insert, not_, select
from sqlalchemy.orm import Session

from db.chunks import in_chunks
from db.models import utcnow
from db.models.audit import PuzzleAudit
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
        return len(ids)
    return run_txn(session, txn)


def _solved(solvers: Sequence[str]):
    return select(PuzzleAudit.puzzle_id).where(PuzzleAudit.solver.in_(solvers), PuzzleAudit.exact >= 1.0)


def check_flag(flag: str) -> str:
    """'' (no filter), one of FLAGS or a shortcut solver's name; UserError (one line) otherwise."""
    if flag and flag not in FLAGS and flag not in SHORTCUTS:
        raise UserError(f"audit flag must be one of {', '.join(CHOICES)}, not {flag[:40]!r}")
    return flag


def flag_condition(flag: str, puzzle_id, dialect: str):
    """The audit flag as one condition on a puzzle id column. "Solved by" is an IN over an index range
    of puzzle_audit (few puzzles); "audited" is an EXISTS probe of the primary key per row (an IN over
    every audit row built a set of 700,000 at 100,000 puzzles), "unaudited" its NOT EXISTS, an anti-join
    on PostgreSQL (docs/BENCHMARKS.md, "Audit per puzzle")."""
    audited = exists().where(PuzzleAudit.puzzle_id == puzzle_id)
    if flag == "any":
        return puzzle_id.in_(_solved(SHORTCUTS))
    if flag == "none":
        if dialect == "sqlite":
            # NOT IN over the (few) solved puzzles: one lookup a row in an index SQLite builds once (its
            # NOT EXISTS probed six solvers a row: 3x slower); puzzle_id is never NULL
            return and_(audited, puzzle_id.not_in(_solved(SHORTCUTS)))
        # PostgreSQL: an anti-join (its NOT IN plan was 3x slower at 100,000 puzzles)
        return and_(audited, not_(_solved(SHORTCUTS).where(PuzzleAudit.puzzle_id == puzzle_id).exists()))
    if flag == "unaudited":
        return not_(audited)
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

"""Eval reports (`mvp eval`) stored per run checkpoint and set split, for the Rollouts and Stats pages.

One row per (run, checkpoint, set, split): a new eval of the same key replaces the old row (done
explicitly, since SQL's unique keys treat the base model's NULL checkpoint as distinct)."""
from __future__ import annotations

from sqlalchemy import delete, select
from sqlalchemy.orm import Session, sessionmaker

from db.models.runs import Checkpoint, Evaluation, Run
from db.txn import run_txn


def _key(run_id: str, checkpoint_id: int | None, set_name: str, split: str):
    c = Evaluation.checkpoint_id
    return (Evaluation.run_id == run_id, c.is_(None) if checkpoint_id is None else c == checkpoint_id,
            Evaluation.set_name == set_name, Evaluation.split == split)


def save_evaluation(Session: sessionmaker, run_id: str, checkpoint_id: int | None, set_name: str,
                    split: str | None, report: dict) -> int:
    """Store the report (replacing one of the same key); returns the row id."""
    split = split or ""
    overall = report["groups"]["all"]["model"]
    with Session() as s:
        def txn():
            s.execute(delete(Evaluation).where(*_key(run_id, checkpoint_id, set_name, split)))
            row = Evaluation(run_id=run_id, checkpoint_id=checkpoint_id, set_name=set_name, split=split,
                             n_puzzles=int(report["n_puzzles"]), exact=float(overall["exact"]),
                             total=float(overall["total"]), report=report)
            s.add(row)
            s.flush()
            return row.id
        return run_txn(s, txn)


def list_evaluations(s: Session, run_ids: list[str] | None = None) -> list[dict]:
    """Every stored eval, oldest first: run, checkpoint label and step, set, split, the report."""
    q = (select(Evaluation, Checkpoint.step, Run.kind).join(Run, Run.id == Evaluation.run_id)
         .outerjoin(Checkpoint, Checkpoint.id == Evaluation.checkpoint_id).order_by(Evaluation.id))
    if run_ids:
        q = q.where(Evaluation.run_id.in_(run_ids))
    return [{"id": e.id, "run_id": e.run_id, "run_kind": kind, "checkpoint_id": e.checkpoint_id,
             "step": step, "checkpoint": "start model" if e.checkpoint_id is None else f"step {step}",
             "set_name": e.set_name, "split": e.split, "n_puzzles": e.n_puzzles, "exact": e.exact,
             "total": e.total, "report": e.report, "created_at": e.created_at}
            for e, step, kind in s.execute(q)]

"""Store rollout answers (`mvp rollout`) in the database: one `Rollout` row per answer, under a run
of its own (`mvp rollout --model PATH`) or under an indexed training run's checkpoint
(`mvp rollout --run RUN --checkpoint C`, `RolloutStore.for_checkpoint`; db/runs/index.py).

Resumable: `done_keys()` lists the (puzzle, sample) pairs already stored for the run's base model
(checkpoint NULL), and `add()` skips those keys explicitly, since SQL's unique key treats NULL
checkpoints as distinct (see db/models/runs.py)."""
from __future__ import annotations

import re

from sqlalchemy import select, update
from sqlalchemy.orm import sessionmaker

from db.models.runs import Checkpoint, Rollout, Run
from db.txn import run_txn

_SLUG = re.compile(r"[^A-Za-z0-9._-]+")


def run_id_for(name: str) -> str:
    """A run id from a user-given name (stable, so re-running the same name resumes it)."""
    slug = _SLUG.sub("-", name).strip("-")[:64]
    return slug or "rollout"


class RolloutStore:
    def __init__(self, Session: sessionmaker, run_name: str, model_path: str = "", config: dict | None = None,
                 set_name: str | None = None, records: list[dict] | None = None, kind: str = "rollout",
                 checkpoint_step: int | None = None, split: str | None = None):
        """Open (or create) the run. `records`: puzzles to make sure exist in the database (rollouts
        reference puzzles; a --puzzles file may hold puzzles the database has not seen)."""
        self.Session = Session
        self.run_id = run_id_for(run_name)
        self.set_name, self.split = set_name, split
        self.owns_run = True
        with Session() as s:
            def create():
                run = s.get(Run, self.run_id)
                if run is None:
                    s.add(Run(id=self.run_id, name=run_name, kind=kind, model_path=model_path,
                              set_name=set_name, config=config or {}, status="running"))
                else:
                    run.status = "running"
                s.flush()
                if records:
                    from db.sets.importer import store_records
                    store_records(s, records)
                ckpt = None
                if checkpoint_step is not None:
                    ckpt = s.scalar(select(Checkpoint).where(Checkpoint.run_id == self.run_id,
                                                             Checkpoint.step == checkpoint_step))
                    if ckpt is None:
                        ckpt = Checkpoint(run_id=self.run_id, step=checkpoint_step, path=model_path)
                        s.add(ckpt)
                        s.flush()
                return ckpt.id if ckpt else None
            self.checkpoint_id = run_txn(s, create)

    @classmethod
    def for_checkpoint(cls, Session: sessionmaker, run_id: str, checkpoint_id: int | None,
                       set_name: str | None, split: str | None = None) -> RolloutStore:
        """Answers of an indexed run's checkpoint (None: its base model); the run must exist."""
        self = cls.__new__(cls)
        self.Session, self.run_id, self.checkpoint_id = Session, run_id, checkpoint_id
        self.set_name, self.split = set_name, split
        self.owns_run = False
        return self

    def _ckpt_filter(self):
        c = Rollout.checkpoint_id
        return c.is_(None) if self.checkpoint_id is None else c == self.checkpoint_id

    def done_keys(self) -> set[tuple[str, int]]:
        with self.Session() as s:
            rows = s.execute(select(Rollout.puzzle_id, Rollout.sample_index)
                             .where(Rollout.run_id == self.run_id, self._ckpt_filter()))
            return {(p, int(i)) for p, i in rows}

    def add(self, rows: list[dict]) -> int:
        """Insert answer rows (dicts from mvp_core.model.rollout) not stored yet; returns how many."""
        if not rows:
            return 0
        with self.Session() as s:
            def insert():
                ids = sorted({r["puzzle_id"] for r in rows})
                have = {(p, int(i)) for p, i in s.execute(
                    select(Rollout.puzzle_id, Rollout.sample_index)
                    .where(Rollout.run_id == self.run_id, self._ckpt_filter(), Rollout.puzzle_id.in_(ids)))}
                new = [r for r in rows if (r["puzzle_id"], r["sample_index"]) not in have]
                s.add_all([Rollout(run_id=self.run_id, checkpoint_id=self.checkpoint_id, puzzle_id=r["puzzle_id"],
                                   sample_index=r["sample_index"], completion=r["completion"],
                                   chosen_labels=list(r["chosen_labels"]), format=r["format"],
                                   selection=r["selection"], order=r["order"], exact=r["exact"], total=r["total"],
                                   advantage=r.get("advantage"), set_name=self.set_name, split=self.split)
                           for r in new])
                return len(new)
            return run_txn(s, insert)

    def finish(self, status: str = "done") -> None:
        """The run's status (a rollout run of its own; a training run's status is its directory's)."""
        if not self.owns_run:
            return
        with self.Session() as s:
            run_txn(s, lambda: s.execute(update(Run).where(Run.id == self.run_id).values(status=status)))

    def rows(self) -> list[dict]:
        with self.Session() as s:
            return [{"puzzle_id": r.puzzle_id, "sample_index": r.sample_index, "completion": r.completion,
                     "chosen_labels": list(r.chosen_labels), "format": r.format, "selection": r.selection,
                     "order": r.order, "exact": r.exact, "total": r.total, "advantage": r.advantage}
                    for r in s.scalars(select(Rollout).where(Rollout.run_id == self.run_id, self._ckpt_filter())
                                       .order_by(Rollout.puzzle_id, Rollout.sample_index))]

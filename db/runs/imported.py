"""Store a run brought back from another engine (`mvp import-run`) in the tables the studio's own runs
use: one `Run` (kind = the engine), a `Checkpoint` per step, and a `Rollout` row per generation, so
the Rollouts page shows it beside the studio's runs and `mvp eval --run RUN --checkpoint STEP`
scores a checkpoint whose Hugging Face folder was given.

Step 0 (verl/EasyR1 validate before training) is the run's starting model (checkpoint NULL, as the
studio's base-model answers). A step whose generations came without a checkpoint folder is still a
version on the page; its checkpoint row points at the generations file it came from, which
`mvp eval` refuses as not a model folder. All of it is one transaction: a bad input stores nothing."""
from __future__ import annotations

from sqlalchemy.orm import sessionmaker

from db.models.runs import Checkpoint, Rollout, Run
from db.txn import run_txn
from mvp_core.errors import UserError


def store_imported_run(Session: sessionmaker, run_id: str, *, engine: str, model_path: str, set_name: str,
                       config: dict, checkpoints: dict[int, str], placed: list, sources: dict[int, str]) -> dict:
    """`placed`: mvp_core.runs_import.match.Placed rows; `checkpoints`: step -> HF folder;
    `sources`: step -> the generations file (the checkpoint path of a step with no folder).
    Returns {steps, answers, puzzles}."""
    steps = sorted({p.step for p in placed} | set(checkpoints))
    with Session() as s:
        def write():
            if s.get(Run, run_id) is not None:
                raise UserError(f"run {run_id!r} exists already; give another --name")
            s.add(Run(id=run_id, name=run_id, kind=engine, model_path=model_path, set_name=set_name,
                      config=config, status="done", dir=""))
            s.flush()
            ck_ids: dict[int, int | None] = {}
            for step in steps:
                if step == 0 and step not in checkpoints:
                    ck_ids[step] = None          # before training: the starting model's answers
                    continue
                ck = Checkpoint(run_id=run_id, step=step, path=checkpoints.get(step) or sources[step])
                s.add(ck)
                s.flush()
                ck_ids[step] = ck.id
            s.add_all([Rollout(run_id=run_id, checkpoint_id=ck_ids[p.step], set_name=set_name, split=p.split,
                               **{**p.row, "chosen_labels": list(p.row["chosen_labels"])}) for p in placed])
            return {"steps": steps, "answers": len(placed), "puzzles": len({p.puzzle_id for p in placed})}
        return run_txn(s, write)

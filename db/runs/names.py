"""How the pages name a model version: by what it is. A checkpoint is "RUN · step N · GRPO from START";
a training run's starting model is "RUN · start: START", where START is the model the run began
from: another run's checkpoint ("warm start SFT run R step N") or a model directory ("model NAME").
Never "base model": a GRPO run warm-started from an SFT checkpoint begins from a trained model. A run
that only answered (a rollout, an eval, an import) is named by the model it answered with: "RUN ·
model: GRPO run R step N" (not "start: warm start ...", which read as the warm start itself). The
one place this wording lives (the Rollouts pickers and panes, the eval panel's checkpoint picker, the
Stats baselines and the Train page's model picker all use it)."""
from __future__ import annotations

from pathlib import Path

from sqlalchemy import select
from sqlalchemy.orm import Session

from db.models.runs import Checkpoint, Run

TRAINER = {"train": "GRPO", "sft": "SFT"}
WARM = "warm start "        # start_name's word for a run's checkpoint a training run began from


def trainer_name(kind: str | None) -> str:
    """GRPO / SFT for the run kinds the index stores (db/runs/index.py), else the kind as stored."""
    return TRAINER.get(str(kind or ""), str(kind or "run"))


def _run_checkpoint_of(path: str) -> tuple[str, int] | None:
    """(run directory name, step) when `path` is DATA/runs/RUN/checkpoints/step_N (mvp_core/train/rundir.py)."""
    p = Path(path)
    if p.parent.name == "checkpoints" and p.name.startswith("step_") and p.name[5:].isdigit():
        return p.parent.parent.name, int(p.name[5:])
    return None


def start_name(s: Session, model_path: str | None) -> str:
    """What a run started from: a known run's checkpoint, a checkpoint directory of a run not
    indexed, or a model directory (by its name)."""
    if not model_path:
        return "unknown model"
    row = s.execute(select(Run.id, Run.kind, Checkpoint.step).join(Checkpoint, Checkpoint.run_id == Run.id)
                    .where(Checkpoint.path == model_path).limit(1)).first()
    if row is not None:
        return f"{WARM}{trainer_name(row[1])} run {row[0]} step {row[2]}"
    ck = _run_checkpoint_of(model_path)
    if ck is not None:       # the path spelled otherwise (relative, a link): the run by its directory
        run_dir = Path(model_path).resolve().parent.parent
        run = s.execute(select(Run.id, Run.kind).where(Run.dir.in_((str(run_dir), str(Path(model_path).parent.parent))))
                        .limit(1)).first()
        return f"{WARM}{trainer_name(run[1])} run {run[0]} step {ck[1]}" if run else \
            f"{WARM}run {ck[0]} step {ck[1]}"
    return f"model {Path(model_path).name or model_path}"


def start_label(kind: str | None, start: str) -> str:
    """A run's own model version (its checkpoint key "base"): where a training run started, or the
    model a run that only answered (rollout, eval, import) answered with."""
    if str(kind or "") in TRAINER:
        return f"start: {start}"
    return f"model: {start.removeprefix(WARM).removeprefix('model ')}"


def checkpoint_label(run_id: str, kind: str | None, step: int | None, start: str) -> str:
    """A checkpoint (step given) or the run's own model (step None), named by what it is."""
    if step is None:
        return f"{run_id} · {start_label(kind, start)}"
    return f"{run_id} · step {step} · {trainer_name(kind)} from {start}"


def version_label(s: Session, run_id: str, step: int | None) -> str:
    """`checkpoint_label` read from the store (the run's kind and start model)."""
    run = s.get(Run, run_id)
    if run is None:
        return f"{run_id} · {'start model' if step is None else f'step {step}'}"
    return checkpoint_label(run_id, run.kind, step, start_name(s, run.model_path))

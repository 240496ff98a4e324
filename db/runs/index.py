"""The database's index of training runs (`mvp train`, `mvp sft`) and their checkpoints.

The run directory is the source of truth (mvp_core/train/rundir.py: config.yaml, status.json,
checkpoints/step_N/); `index_run` copies what the UI needs into `runs` / `checkpoints` rows and is
idempotent, so the app re-syncs DATA/runs/ whenever a page lists runs (`sync_runs`). A checkpoint
deleted from disk (save_total_limit) keeps its row while answers reference it, else the row goes.

Checkpoint keys, as the CLI and the pages spell them: "base" (the run's starting model, stored as
checkpoint NULL), "latest", or a step number ("10" or "step_000010").

Paths are stored relative to the data directory (db/paths.py), so a copied data directory keeps its
runs; a copied run's config.yaml still names its start model at the old place, which is read at
the same place relative to the run directory when it is there (`moved_with`)."""
from __future__ import annotations

import hashlib
import os
from pathlib import Path

from sqlalchemy import delete, func, select
from sqlalchemy.orm import Session, sessionmaker

from db.models.runs import Checkpoint, Evaluation, Rollout, Run
from db.paths import moved_with
from db.txn import run_txn
from mvp_core.errors import UserError

BASE = "base"
TRAIN_KINDS = ("train", "sft")
_STATE = {"running": "running", "finished": "done", "stopped": "stopped", "failed": "failed"}


def read_run_dir(path: str | Path) -> dict | None:
    """What a run directory says about itself; None when it holds no run (no config.yaml yet, and
    no launch.yaml either: the web app writes that one before the trainer starts)."""
    from mvp_core.config import load_yaml_mapping
    from mvp_core.train.rundir import read_status
    d = Path(path).resolve()
    cfg_file = d / "config.yaml" if (d / "config.yaml").is_file() else d / "launch.yaml"
    try:
        cfg = load_yaml_mapping(cfg_file, ignore=())
    except UserError:
        return None
    info = cfg.get("run_info") or {}
    status = read_status(d)
    ckpts = []
    if (d / "checkpoints").is_dir():
        for p in (d / "checkpoints").iterdir():
            # trainer_state.json is written last: a checkpoint without it is incomplete
            if (p.name.startswith("step_") and p.name[5:].isdigit() and p.is_dir()
                    and (p / "trainer_state.json").is_file()):
                ckpts.append((int(p.name.split("_")[1]), str(p)))
    set_info = info.get("set") if isinstance(info.get("set"), dict) else {}
    model = str(cfg.get("model") or "")
    if os.path.isabs(str(cfg.get("output_dir") or "")):    # a run copied with its data directory
        model = moved_with(model, str(cfg["output_dir"]), d)
    return {"dir": str(d.resolve()), "name": d.name, "kind": _kind(cfg, info),
            "model_path": model, "set_name": cfg.get("set_name") or set_info.get("name"),
            "config": {k: v for k, v in cfg.items() if k != "run_info"},
            "status": _STATE.get(status.get("state"), "created"), "checkpoints": sorted(ckpts)}


def _kind(cfg: dict, info: dict) -> str:
    kind = info.get("kind") or info.get("trainer") or cfg.get("trainer")
    return "sft" if str(kind).lower() == "sft" else "train"


def _run_id(s: Session, name: str, run_dir: str) -> str:
    """The directory name, unless another run already uses it (then name + a hash of the path)."""
    existing = s.scalar(select(Run.id).where(Run.dir == run_dir))
    if existing:
        return existing
    rid = name[:64]
    if s.get(Run, rid) is None:
        return rid
    return f"{name[:55]}-{hashlib.sha1(run_dir.encode()).hexdigest()[:8]}"


def index_run(s: Session, run_dir: str | Path) -> str | None:
    """Upsert the run and its checkpoints (in the caller's transaction); returns the run id."""
    info = read_run_dir(run_dir)
    if info is None:
        return None
    rid = _run_id(s, info["name"], info["dir"])
    run = s.get(Run, rid)
    if run is None:
        run = Run(id=rid, name=info["name"], kind=info["kind"], dir=info["dir"])
        s.add(run)
    run.kind, run.model_path, run.set_name = info["kind"], info["model_path"], info["set_name"]
    run.config, run.status = info["config"], info["status"]
    s.flush()
    have = {c.step: c for c in s.scalars(select(Checkpoint).where(Checkpoint.run_id == rid))}
    on_disk = dict(info["checkpoints"])
    for step, path in on_disk.items():
        if step not in have:
            s.add(Checkpoint(run_id=rid, step=step, path=path))
    gone = [c.id for step, c in have.items() if step not in on_disk]
    if gone:
        used = set(s.scalars(select(Rollout.checkpoint_id).where(Rollout.checkpoint_id.in_(gone)).distinct()))
        used |= set(s.scalars(select(Evaluation.checkpoint_id).where(Evaluation.checkpoint_id.in_(gone))))
        unused = [c for c in gone if c not in used]
        if unused:
            s.execute(delete(Checkpoint).where(Checkpoint.id.in_(unused)))
    s.flush()
    return rid


def sync_runs(Session: sessionmaker, data_dir: str | Path) -> list[str]:
    """Index every run directory under DATA/runs/ (the web app's runs and any CLI run put there)."""
    root = Path(data_dir) / "runs"
    dirs = sorted(p for p in root.iterdir() if p.is_dir()) if root.is_dir() else []
    with Session() as s:
        return run_txn(s, lambda: [rid for d in dirs if (rid := index_run(s, d))])


def list_runs(s: Session, kinds: tuple[str, ...] | None = None) -> list[dict]:
    """Every run (newest first) with its number of checkpoints and stored answers."""
    n_ck = (select(Checkpoint.run_id, func.count(Checkpoint.id).label("n")).group_by(Checkpoint.run_id)
            .subquery())
    q = select(Run, func.coalesce(n_ck.c.n, 0)).outerjoin(n_ck, n_ck.c.run_id == Run.id)
    if kinds:
        q = q.where(Run.kind.in_(kinds))
    return [{"id": r.id, "name": r.name, "kind": r.kind, "model_path": r.model_path, "set_name": r.set_name,
             "status": r.status, "dir": r.dir, "config": r.config or {}, "n_checkpoints": int(n),
             "created_at": r.created_at}
            for r, n in s.execute(q.order_by(Run.created_at.desc(), Run.id.desc()))]


def checkpoint_choices(s: Session, run_id: str) -> list[tuple[str, str]]:
    """(label, key) of a run's model versions: the model it started from (db/runs/names.py: never
    "base model", which a warm start is not), then each checkpoint by step."""
    from db.runs.names import start_label, start_name
    run = s.get(Run, run_id)
    out = [(start_label(run.kind if run else None, start_name(s, run.model_path if run else None)), BASE)]
    for step, path in s.execute(select(Checkpoint.step, Checkpoint.path).where(Checkpoint.run_id == run_id)
                                .order_by(Checkpoint.step)):
        missing = "" if Path(path).exists() else " (deleted)"
        out.append((f"step {step}{missing}", str(step)))
    return out


def resolve(s: Session, run_ref: str, ckpt_ref: str | None) -> tuple[Run, Checkpoint | None, str]:
    """(run, checkpoint or None for the base model, the model directory to load). `run_ref` is a run
    id or a run directory (indexed on the way); `ckpt_ref` a checkpoint key (module docstring)."""
    run = s.get(Run, run_ref)
    if run is None and Path(run_ref).is_dir():
        rid = index_run(s, run_ref)
        run = s.get(Run, rid) if rid else None
    if run is None:
        raise UserError(f"no run {run_ref!r} (give a run id from the Train page or a run directory)")
    key = (ckpt_ref or "latest").strip()
    if key == BASE:
        if not run.model_path:
            raise UserError(f"run {run.id} records no base model path")
        return run, None, run.model_path
    q = select(Checkpoint).where(Checkpoint.run_id == run.id)
    if key == "latest":
        ck = s.scalar(q.order_by(Checkpoint.step.desc()).limit(1))
    else:
        try:
            step = int(key.removeprefix("step_"))
        except ValueError:
            raise UserError(f"checkpoint {key!r}: give base, latest or a step number") from None
        ck = s.scalar(q.where(Checkpoint.step == step))
    if ck is None:
        steps = ", ".join(str(c.step) for c in s.scalars(q.order_by(Checkpoint.step))) or "none"
        raise UserError(f"run {run.id} has no checkpoint {key!r} (checkpoints: {steps}; or base)")
    if not Path(ck.path).is_dir():
        raise UserError(f"checkpoint step {ck.step} of run {run.id} was deleted from disk ({ck.path})")
    return run, ck, ck.path

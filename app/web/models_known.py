"""The local models the studio knows, for the Train page's model picker: the demo's and tests' tiny
models (DATA/tiny-model, DATA/models/*), and every checkpoint of the indexed training runs (so
GRPO can start from an SFT checkpoint). `check_model` is the check a launch makes first."""
from __future__ import annotations

from pathlib import Path

from mvp_core.errors import UserError


def check_model(path: str) -> None:
    """A one-line UserError unless `path` is a model directory the trainer can load."""
    if not path or not str(path).strip():
        raise UserError("choose a model (a local model directory or a run's checkpoint)")
    from mvp_core.model.policy import model_type
    model_type(path)        # raises: not a directory / no config.json / unsupported model_type


def _is_model(d: Path) -> bool:
    return (d / "config.json").is_file()


def known_models(Session, data_dir: Path) -> list[tuple[str, str]]:
    """(label, path) choices: local model directories, then each run's checkpoints (newest run first)."""
    from sqlalchemy import select

    from db.models.runs import Checkpoint, Run
    from db.runs.names import checkpoint_label, start_name
    data_dir = Path(data_dir)
    out: list[tuple[str, str]] = []
    cands = [data_dir / "tiny-model", *sorted((data_dir / "models").glob("*"))]
    for d in cands:
        if d.is_dir() and _is_model(d):
            out.append((f"{d.name} (local model)", str(d.resolve())))
    with Session() as s:
        rows = s.execute(select(Run.id, Run.kind, Run.model_path, Checkpoint.step, Checkpoint.path)
                         .join(Checkpoint, Checkpoint.run_id == Run.id)
                         .order_by(Run.created_at.desc(), Run.id, Checkpoint.step.desc())).all()
        starts = {mp: start_name(s, mp) for mp in {r[2] for r in rows}}
    for rid, kind, start, step, path in rows:
        if Path(path).is_dir() and _is_model(Path(path)):
            out.append((checkpoint_label(rid, kind, step, starts[start]), path))
    return out

"""Which model `mvp rollout` / `mvp eval` load and where their answers are stored.

`--model PATH`: that directory; answers go to a run of their own (`--name`, default
`rollout-<model dir name>`). `--run RUN [--checkpoint C]`: an indexed training run (its id, or its
run directory, indexed on the way; db/runs.py) and one of its checkpoints (`base`, `latest`
(default) or a step): the answers are stored under that run and checkpoint, so the Rollouts page
can put two checkpoints of one run side by side."""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from mvp_core.errors import UserError


@dataclass
class Target:
    model_path: str
    run_id: str | None = None            # an indexed run (None: a --model run of its own)
    checkpoint_id: int | None = None     # None: the run's base model
    label: str = ""                      # for messages: "run X, step 10"
    run_config: dict = field(default_factory=dict)


def add_target_args(p) -> None:
    src = p.add_mutually_exclusive_group(required=True)
    src.add_argument("--model", help="local model directory (Qwen2.5-VL / Qwen2-VL / Qwen3-VL)")
    src.add_argument("--run", help="a training run (id or run directory) whose checkpoint to use")
    p.add_argument("--checkpoint", help="with --run: base, latest (default) or a step number")
    p.add_argument("--name", help="with --model: run name to store the answers under "
                                  "(default rollout-<model dir name>)")
    p.add_argument("--split", help="only the set's puzzles of this split (train, val, test)")


def resolve_target(args, data: Path) -> Target:
    if args.checkpoint and not args.run:
        raise UserError("--checkpoint needs --run")
    if not args.run:
        return Target(model_path=args.model, label=args.model)
    from db.engine import open_db
    from db.runs import resolve
    Session = open_db(args.db, data)
    with Session() as s:
        run, ck, path = resolve(s, args.run, args.checkpoint)
        target = Target(model_path=path, run_id=run.id, checkpoint_id=ck.id if ck else None,
                        label=f"run {run.id}, {'step ' + str(ck.step) if ck else 'base model'}",
                        run_config=dict(run.config or {}))
        s.commit()                       # a run directory given by path was indexed
    return target


def apply_run_settings(args, target: Target) -> None:
    """A run's checkpoint is asked as it was trained: its image size and video mode, unless given."""
    cfg = target.run_config
    if getattr(args, "max_pixels", None) is None and cfg.get("max_pixels"):
        args.max_pixels = int(cfg["max_pixels"])
    if not getattr(args, "video_mode", False) and cfg.get("video_mode"):
        args.video_mode = True


def default_run_name(args) -> str:
    return args.name or f"rollout-{Path(args.model).resolve().name}"


def filter_split(records: list[dict], split: str | None, source: str) -> list[dict]:
    """The records of one split; a clear error when the source has no such split."""
    if not split:
        return records
    have = sorted({str(r.get("split")) for r in records if r.get("split")})
    if not have:
        raise UserError(f"{source} has no splits (freeze it with splits to use --split)")
    out = [r for r in records if r.get("split") == split]
    if not out:
        raise UserError(f"{source} has no puzzles in split {split!r} (splits: {', '.join(have)})")
    return out

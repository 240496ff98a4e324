"""Which model `mvp rollout` / `mvp eval` load and where their answers are stored.

`--model PATH`: that directory; answers go to a run of their own (`--name`, default
`rollout-<model dir name>`). `--run RUN [--checkpoint C]`: an indexed training run (its id, or its
run directory, indexed on the way; db/runs/index.py) and one of its checkpoints (`base`, `latest`
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
    p.add_argument("--split", type=_split_name,
                   help="only the set's puzzles of this split (train, val, test; an export's name, validation, "
                        "is the same split)")
    p.add_argument("--allow-trained-split", action="store_true",
                   help="score a run's checkpoint on a split of the set it trained on (refused by default: "
                        "such numbers measure memory, not learning)")


def _split_name(name: str) -> str:
    """The set's own split name for what was typed: exports write `datasets`' names (validation), so a
    user who read an export's file names types those (mvp_core/export/formats.py SPLIT_NAMES)."""
    from mvp_core.export.formats import set_split
    return set_split(name.strip())


def resolve_target(args, data: Path) -> Target:
    if args.checkpoint and not args.run:
        raise UserError("--checkpoint needs --run")
    if not args.run:
        return Target(model_path=args.model, label=args.model)
    key = (args.checkpoint or "latest").strip()
    # a step is digits only: int() also took "1_0" (step 10), "+10" and non-ASCII digits
    digits = key.removeprefix("step_")
    if key not in ("base", "latest") and not (digits.isascii() and digits.isdigit()):
        raise UserError(f"checkpoint {key!r}: give base, latest or a step number")
    from db.engine import open_db
    from db.models.runs import Checkpoint, Run
    from db.runs.index import index_run, read_run_dir, resolve
    from sqlalchemy import select
    Session = open_db(args.db, data)
    with Session() as s:
        run = s.get(Run, args.run)
        if run is None and Path(args.run).is_dir():
            if read_run_dir(args.run) is None:
                raise UserError(f"run directory {args.run} holds no readable run ({_why_no_run(Path(args.run))})")
            run = s.get(Run, index_run(s, args.run))
        elif run is not None and run.dir and Path(run.dir).is_dir():
            index_run(s, run.dir)        # the index may be stale: checkpoints saved or deleted since
        if key == "latest" and run is not None:
            # the latest checkpoint still on disk (a deleted one keeps its row while answers use it)
            steps = s.scalars(select(Checkpoint).where(Checkpoint.run_id == run.id)
                              .order_by(Checkpoint.step.desc()))
            on_disk = next((c.step for c in steps if Path(c.path).is_dir()), None)
            key = str(on_disk) if on_disk is not None else key
        run, ck, path = resolve(s, run.id if run is not None else args.run, key)
        target = Target(model_path=path, run_id=run.id, checkpoint_id=ck.id if ck else None,
                        label=f"run {run.id}, {'step ' + str(ck.step) if ck else 'base model'}",
                        run_config=dict(run.config or {}))
        s.commit()                       # a run directory given by path was indexed
    return target


def _trained_on(target: Target) -> tuple[str, list[str]]:
    """(set name, splits) the target's run trained on: from the indexed run's config, or for --model a
    checkpoint directory inside a run (RUN/checkpoints/step_N), from RUN/config.yaml."""
    cfg = target.run_config
    if not cfg:
        p = Path(target.model_path)
        if p.parent.name == "checkpoints" and (p.parent.parent / "config.yaml").is_file():
            from mvp_core.config import load_yaml_mapping
            try:
                cfg = load_yaml_mapping(p.parent.parent / "config.yaml")
            except (UserError, OSError):
                cfg = {}
    return str(cfg.get("set_name") or ""), [str(s) for s in (cfg.get("set_splits") or [])]


def check_trained_split(args, target: Target, records: list[dict]) -> list[dict]:
    """The records a checkpoint may be scored on (held-out numbers only, unless asked): a split its run trained on is
    refused when named (--split train) unless --allow-trained-split; with no --split the trained
    split's puzzles are left out (and said so), so the numbers are held-out ones."""
    import sys
    set_name, splits = _trained_on(target)
    if not getattr(args, "set", None) or set_name != args.set or not splits or args.allow_trained_split:
        return records
    if args.split:
        if args.split in splits:
            raise UserError(f"{target.label} trained on split {'/'.join(splits)} of set {set_name!r}; scoring it on "
                            f"split {args.split} measures memory, not learning (give --split val or test, or "
                            f"--allow-trained-split)")
        return records
    kept = [r for r in records if r.get("split") not in splits]
    if not kept:
        raise UserError(f"{target.label} trained on every split of set {set_name!r} ({'/'.join(splits)}): nothing "
                        f"held out to score (--allow-trained-split scores it anyway)")
    if len(kept) < len(records):
        print(f"scoring the {len(kept)} puzzles of set {set_name!r} outside the trained split "
              f"{'/'.join(splits)} (--allow-trained-split for all {len(records)})", file=sys.stderr)
    return kept


def _why_no_run(d: Path) -> str:
    from mvp_core.config import load_yaml_mapping
    if not (d / "config.yaml").is_file():
        return "no config.yaml"
    try:
        load_yaml_mapping(d / "config.yaml", ignore=())
    except UserError as e:
        return str(e)
    return "config.yaml cannot be read"


# The run config keys rollout / eval take (app/cli/model.py, settings): what each must be.
_RUN_KINDS = {"max_completion_length": int, "top_k": int, "max_pixels": int, "temperature": float,
              "top_p": float, "min_p": float, "repetition_penalty": float, "video_mode": bool}


def run_setting(cfg: dict, key: str, default=None):
    """A run config value as the type rollout / eval need, read by pydantic as the trainer's config
    was; a damaged value is a one-line error (was a traceback from int() or a comparison, or, for
    video_mode: 'no', video mode in silence)."""
    from pydantic import TypeAdapter, ValidationError
    v = cfg.get(key)
    if v is None:
        return default
    kind = _RUN_KINDS[key]
    try:
        return TypeAdapter(kind).validate_python(v)
    except ValidationError:
        what = {int: "a whole number", float: "a number", bool: "true or false"}[kind]
        raise UserError(f"the run's config.yaml: {key} is {v!r}, not {what}") from None


def apply_run_settings(args, target: Target) -> None:
    """A run's checkpoint is asked as it was trained: its image size and video mode, unless given."""
    cfg = target.run_config
    if getattr(args, "max_pixels", None) is None and run_setting(cfg, "max_pixels"):
        args.max_pixels = run_setting(cfg, "max_pixels")
    if not getattr(args, "video_mode", False) and run_setting(cfg, "video_mode"):
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

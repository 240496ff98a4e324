"""`mvp train CONFIG.yaml [key=value ...] [--resume]`: GRPO post-training.

The same command runs in one process or under `torchrun --nproc_per_node N -m app.cli train ...`.
It reads a curated-set snapshot (puzzles.jsonl + frames) and writes a run directory; with
`--set NAME` it first snapshots that curated set from the database into the run directory."""
from __future__ import annotations

import sys
from pathlib import Path

from app.cli.args import add_db_args
from mvp_core.errors import UserError


def register(sub) -> None:
    p = sub.add_parser("train", help="GRPO post-training on a curated set",
                       description="GRPO post-training. Settings: a YAML file, then key=value overrides "
                                   "(see --print-config for every key with its documentation). Put --options "
                                   "before CONFIG or after all key=value settings, not between them.")
    p.add_argument("config", nargs="?", help="YAML config file (optional when every setting is given as key=value)")
    p.add_argument("overrides", nargs="*", help="key=value settings that override the file, e.g. max_steps=10")
    p.add_argument("--resume", action="store_true", help="continue the run in output_dir from its latest checkpoint")
    p.add_argument("--set", dest="set_name", help="snapshot this curated set from the database as the puzzles file")
    add_db_args(p, db_required_for="--set")
    p.add_argument("--print-config", action="store_true", help="print the resolved config with documentation and exit")
    p.set_defaults(func=_train)


def _train(args) -> int:
    from mvp_core.grpo.config import documented_yaml, load_config

    path, overrides = args.config, list(args.overrides)
    if path and "=" in path and not Path(path).exists():     # `mvp train key=value ...` without a file
        path, overrides = None, [path] + overrides
    if args.print_config:
        print(documented_yaml(load_config(path, overrides)), end="")
        return 0
    cfg = load_config(path, overrides)
    if args.set_name:
        cfg.puzzles = str(snapshot_set(args.set_name, Path(cfg.output_dir), args.db, args.data, args.resume))
        cfg.set_name = args.set_name
        cfg.data_dir = cfg.data_dir or str(_data_dir(args.data))
    if not cfg.model:
        raise UserError("model: no model path given (model=PATH)")
    # Check the puzzles file before importing torch and transformers (seconds): bad input fails fast.
    from mvp_core.grpo.data import PuzzleSet
    PuzzleSet.open(cfg)
    from mvp_core.grpo.loop import train
    summary = train(cfg, resume=args.resume)
    if summary["state"] == "stopped":
        print(f"stopped at step {summary['step']}; checkpoint saved in {summary['run_dir']}", file=sys.stderr)
    return 0


def _data_dir(explicit):
    from db.engine import data_dir
    return data_dir(explicit)


def snapshot_set(name: str, run_dir: Path, db_url, data, resume: bool) -> Path:
    """Write the curated set's puzzle records to RUN/puzzles.jsonl (kept on --resume, so a resumed
    run trains on exactly the same snapshot even if the set was edited since)."""
    out = run_dir / "puzzles.jsonl"
    if resume and out.is_file():
        return out
    from db.engine import database_url, open_db
    from db.sets import snapshot_set as write_snapshot
    d = _data_dir(data)
    Session = open_db(database_url(db_url, d), d)
    with Session() as s:
        return write_snapshot(s, name, out)

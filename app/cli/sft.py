"""`mvp sft CONFIG.yaml [key=value ...] [--resume]`: the supervised warm start before GRPO
(mvp_core.grpo.sft). Same run directory contract as `mvp train`; `--set NAME` snapshots a
curated set from the database into the run directory first."""
from __future__ import annotations

import sys
from pathlib import Path

from app.cli.args import add_db_args


def register(sub) -> None:
    p = sub.add_parser("sft", help="supervised warm start (answer format + right labels) on a curated set",
                       description="Supervised fine-tuning on the puzzles' answers, loss on completion tokens "
                                   "only. Settings: a YAML file, then key=value overrides (--print-config lists "
                                   "every key with its documentation).")
    p.add_argument("config", nargs="?", help="YAML config file (optional when every setting is key=value)")
    p.add_argument("overrides", nargs="*", help="key=value settings that override the file, e.g. max_steps=10")
    p.add_argument("--resume", action="store_true", help="continue the run in output_dir from its latest checkpoint")
    p.add_argument("--set", dest="set_name", help="snapshot this curated set from the database as the puzzles file")
    add_db_args(p, db_required_for="--set")
    p.add_argument("--print-config", action="store_true", help="print the resolved config with documentation and exit")
    p.set_defaults(func=_sft)


def _sft(args) -> int:
    from mvp_core.grpo.sft_config import SFTConfig, load_sft_config

    path, overrides = args.config, list(args.overrides)
    if path and "=" in path and not Path(path).exists():
        path, overrides = None, [path] + overrides
    cfg = load_sft_config(path, overrides)
    if args.print_config:
        print(SFTConfig.documented_yaml(cfg), end="")
        return 0
    if args.set_name:
        from app.cli.train import _data_dir, snapshot_set
        cfg.puzzles = str(snapshot_set(args.set_name, Path(cfg.output_dir), args.db, args.data, args.resume))
        cfg.set_name = args.set_name
        cfg.data_dir = cfg.data_dir or str(_data_dir(args.data))
    from mvp_core.grpo.data import PuzzleSet
    PuzzleSet.open(cfg)            # bad input fails before torch is imported
    from mvp_core.grpo.sft import train_sft
    summary = train_sft(cfg, resume=args.resume)
    if summary["state"] == "stopped":
        print(f"stopped at step {summary['step']}; checkpoint saved in {summary['run_dir']}", file=sys.stderr)
    return 0

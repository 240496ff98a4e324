"""`mvp train CONFIG.yaml [key=value ...] [--resume]`: GRPO post-training.

The same command runs in one process or under `torchrun --nproc_per_node N -m app.cli train ...`.
It reads a curated-set snapshot (puzzles.jsonl + frames) and writes a run directory; with
`--set NAME` it first snapshots that curated set from the database into the run directory."""
from __future__ import annotations

from app.cli.args import add_trainer_args, config_and_overrides, run_trainer, use_set_flag


def register(sub) -> None:
    p = sub.add_parser("train", help="GRPO post-training on a curated set",
                       description="GRPO post-training. Settings: a YAML file, then key=value overrides "
                                   "(see --print-config for every key with its documentation). Put --options "
                                   "before CONFIG or after all key=value settings, not between them.")
    add_trainer_args(p)
    p.set_defaults(func=_train)


def _train(args) -> int:
    from mvp_core.train.config import documented_yaml, load_config

    path, overrides = config_and_overrides(args)
    if args.print_config:
        print(documented_yaml(load_config(path, overrides)), end="")
        return 0
    cfg = load_config(path, overrides)
    use_set_flag(cfg, args)
    return run_trainer(cfg, args.resume, _grpo_train)


def _grpo_train():
    from mvp_core.train.loop import train
    return train

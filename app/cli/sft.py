"""`mvp sft CONFIG.yaml [key=value ...] [--resume]`: the supervised warm start before GRPO
(mvp_core.train.sft). Same run directory contract as `mvp train`; `--set NAME` snapshots a
curated set from the database into the run directory first."""
from __future__ import annotations

from app.cli.args import add_trainer_args, config_and_overrides, run_trainer, use_set_flag


def register(sub) -> None:
    p = sub.add_parser("sft", help="supervised warm start (answer format + right labels) on a curated set",
                       description="Supervised fine-tuning on the puzzles' answers, loss on completion tokens "
                                   "only. Settings: a YAML file, then key=value overrides (--print-config lists "
                                   "every key with its documentation).")
    add_trainer_args(p)
    p.set_defaults(func=_sft)


def _sft(args) -> int:
    from mvp_core.train.sft_config import SFTConfig, load_sft_config

    path, overrides = config_and_overrides(args)
    cfg = load_sft_config(path, overrides)
    if args.print_config:
        print(SFTConfig.documented_yaml(cfg), end="")
        return 0
    use_set_flag(cfg, args)
    return run_trainer(cfg, args.resume, _sft_train)


def _sft_train():
    from mvp_core.train.sft import train_sft
    return train_sft

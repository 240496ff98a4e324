"""Argument helpers every subcommand shares, so a flag means the same thing everywhere."""
from __future__ import annotations

import json
from pathlib import Path


def positive_int(text: str) -> int:
    """argparse type of counts (--limit, --threads): a whole number >= 1, or argparse's one-line error
    (a negative --limit silently dropped puzzles from the end: records[:-5])."""
    import argparse
    try:
        n = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if n < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, not {n}")
    return n


def add_db_args(p, *, db_required_for: str = "") -> None:
    """The --db / --data pair (see docs/ARCHITECTURE.md, "Interfaces")."""
    extra = f" for {db_required_for}" if db_required_for else ""
    p.add_argument("--db", help=f"database URL{extra} (default $MVP_DATABASE_URL or SQLite in the data directory)")
    p.add_argument("--data", help=f"data directory{extra} (default $MVP_DATA_DIR or ./data)")


def add_trainer_args(p) -> None:
    """What `mvp train` and `mvp sft` share: CONFIG [key=value ...], --resume, --set NAME (with
    --db/--data) and --print-config."""
    p.add_argument("config", nargs="?", help="YAML config file, or a shipped config by name from any folder (tiny, "
                                             "web, ...; see the error for the list); optional when every setting "
                                             "is given as key=value")
    p.add_argument("overrides", nargs="*", help="key=value settings that override the file, e.g. max_steps=10")
    p.add_argument("--resume", action="store_true", help="continue the run in output_dir from its latest checkpoint")
    p.add_argument("--set", dest="set_name", help="snapshot this curated set from the database as the puzzles file")
    p.add_argument("--split", dest="train_split", default="train",
                   help="with --set: the set's split(s) to train on, comma-separated (default train: val and test "
                        "stay held out); recorded in the run as set_splits")
    add_db_args(p, db_required_for="--set")
    p.add_argument("--print-config", action="store_true", help="print the resolved config with documentation and exit")


def config_and_overrides(args) -> tuple[str | None, list[str]]:
    """(config file or None, overrides): `mvp train key=value ...` without a file puts the first
    key=value where CONFIG goes; a CONFIG that is no file but a shipped config's name
    (mvp_core/resources.py) is that config."""
    from mvp_core.errors import UserError
    from mvp_core.resources import resolve_config, shipped_configs

    path, overrides = args.config, list(args.overrides)
    if path and "=" in path and not _exists(path):
        return None, [path] + overrides
    if not path:
        return path, overrides
    found = resolve_config(path)
    if not _exists(str(found)):
        own = [n for n in shipped_configs() if "/" not in n]     # subfolders hold other engines' recipes
        raise UserError(f"config file {path} does not exist and is no shipped config ({', '.join(own)})")
    return str(found), overrides


def _exists(path: str) -> bool:
    try:
        return Path(path).exists()
    except OSError:       # a key=value longer than a file name can be (ENAMETOOLONG) is no file
        return False


def use_set_flag(cfg, args) -> None:
    """--set NAME: train on a snapshot of that curated set, written into the run directory."""
    if not args.set_name:
        return
    splits = tuple(s.strip() for s in args.train_split.split(",") if s.strip())
    path, set_hash, kept = snapshot_set(args.set_name, Path(cfg.output_dir), args.db, args.data, args.resume, splits)
    cfg.puzzles, cfg.set_name, cfg.set_hash, cfg.set_splits = str(path), args.set_name, set_hash, list(kept)
    cfg.data_dir = cfg.data_dir or str(_data_dir(args.data))


def _data_dir(explicit):
    from db.engine import data_dir
    return data_dir(explicit)


def snapshot_set(name: str, run_dir: Path, db_url, data, resume: bool,
                 splits: tuple[str, ...]) -> tuple[Path, str, tuple[str, ...]]:
    """Write the curated set's puzzle records of `splits` to RUN/puzzles.jsonl (kept on --resume, so a
    resumed run trains on exactly the same snapshot even if the set was edited since); (path, set hash,
    splits kept: () for a set without splits)."""
    out = run_dir / "puzzles.jsonl"
    from db.engine import database_url, open_db
    from db.sets.curated import get_set
    from db.sets.curated import snapshot_set as write_snapshot
    d = _data_dir(data)
    Session = open_db(database_url(db_url, d), d)
    with Session() as s:
        if resume and out.is_file():
            kept = tuple(sorted({json.loads(x).get("split") for x in out.read_text().splitlines() if x.strip()} - {None}))
            return out, get_set(s, name).content_hash, kept
        return write_snapshot(s, name, out, splits)


def run_trainer(cfg, resume: bool, train) -> int:
    """Check the puzzles file before torch and transformers are imported (seconds: bad input fails
    fast), then `train()(cfg, resume=...)`; a run stopped by a signal says where its checkpoint is."""
    import sys

    from mvp_core.train.data import PuzzleSet
    PuzzleSet.open(cfg)
    summary = train()(cfg, resume=resume)
    if summary["state"] == "stopped":
        print(f"stopped at step {summary['step']}; checkpoint saved in {summary['run_dir']}", file=sys.stderr)
    return 0

"""`mvp steer build`: collect and train an energy bank for a run's checkpoint in one process, written
to DATA/steer/<name>.pt (docs/steer.md) -- what the Rollouts page's "Train a steering bank" job runs.

The model is named by run and checkpoint (never a path). Labels come from greedy answers of the model
now (on a curated set's split: the train split by default, the set's held-out splits stay unseen),
from the answers stored for that checkpoint, or from curator verdicts; the last two collect on every
puzzle they label (db/runs/steer_labels.py labelled_puzzles: the review store's accepted and rejected
puzzles, since a frozen set holds only accepted ones), less a chosen set's other splits. The states go
to DATA/steer/states/<name>.pt (kept, so `mvp steer train` can retrain them); the bank records the
run, checkpoint, set and split it came from (`extra`), which the page lists beside it."""
from __future__ import annotations

import argparse
import re
from pathlib import Path

from app.cli.args import add_db_args, positive_int
from mvp_core.errors import UserError

PHASES = ("collect states", "train energies")
LABEL_SOURCES = {"greedy": "greedy answers of the model now", "stored": "answers stored for this checkpoint",
                 "verdicts": "curator verdicts (accepted / rejected puzzles)"}
STORED = ("stored", "verdicts")      # label sources known before the launch (the others: once the model answers)
_NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")


def bank_paths(data: Path, name: str) -> tuple[Path, Path]:
    """(bank file, states file) of a bank name; one line refuses a name that is not a plain file name
    or a bank that exists already (a bank is never overwritten: a page may be applying it)."""
    name = (name or "").strip().removesuffix(".pt")
    if not _NAME_RE.match(name):
        raise UserError("bank name must be 1-64 letters, digits, '.', '_' or '-' (starting with a letter or digit)")
    bank = Path(data) / "steer" / f"{name}.pt"
    if bank.exists():
        raise UserError(f"a bank named {name} exists already: choose another name")
    return bank, Path(data) / "steer" / "states" / f"{name}.pt"


def add_build_parser(ssub, func) -> None:
    b = ssub.add_parser("build", help="collect states and train an energy bank for a run's checkpoint "
                                      "(DATA/steer/NAME.pt)")
    b.add_argument("--run", required=True, help="the training run (id) whose model to steer")
    b.add_argument("--checkpoint", default="base", help="base (the model the run started from) or a step")
    b.add_argument("--set", help="curated set to collect on (greedy labels: required; stored answers and "
                                 "verdicts: only its other splits are left out)")
    b.add_argument("--split", default="train", help="the set's split to collect on (default train; '' the whole set)")
    b.add_argument("--name", required=True, help="bank name: writes DATA/steer/NAME.pt")
    b.add_argument("--labels-from", default="greedy", choices=list(LABEL_SOURCES),
                   help="; ".join(f"{k}: {v}" for k, v in LABEL_SOURCES.items()) + " (default greedy)")
    b.add_argument("--reward-threshold", type=float, default=1.0,
                   help="an answer with reward >= this counts as good, like an exact one (default 1.0)")
    b.add_argument("--per-class", type=positive_int, default=500, help="at most this many per class (default 500)")
    b.add_argument("--limit", type=positive_int, help="use at most this many puzzles")
    b.add_argument("--max-new-tokens", type=positive_int, default=32)
    b.add_argument("--batch-size", type=positive_int, default=4, help="puzzles per forward call")
    b.add_argument("--hidden", default="2048,1024,1024,512", help="energy MLP hidden sizes")
    b.add_argument("--epochs", type=positive_int, default=120)
    b.add_argument("--lr", type=float, default=5e-5)
    b.add_argument("--threads", type=positive_int, help="torch CPU threads")
    add_db_args(b)
    b.set_defaults(func=func)


def build(args, parser: argparse.ArgumentParser, collect, train) -> int:
    """`collect` / `train`: the `mvp steer collect` / `train` commands, run on argument lists made here
    and parsed by `parser` (the `mvp` parser with `steer` registered)."""
    from app.cli.model_target import resolve_target
    from db.engine import data_dir
    data = data_dir(args.data)
    bank, states = bank_paths(data, args.name)     # refused before the model loads
    target = resolve_target(argparse.Namespace(run=args.run, checkpoint=args.checkpoint, model=None, db=args.db),
                            data)
    step, version = _version(args, data, target)
    if args.labels_from not in STORED and not args.set:
        raise UserError("greedy labels need a curated set to answer (--set)")
    db = ["--data", str(data)] + (["--db", args.db] if args.db else [])
    common = [*db, *(["--threads", str(args.threads)] if args.threads else [])]
    labels = {"greedy": [], "verdicts": ["--verdicts"],
              "stored": ["--run", target.run_id, *(["--checkpoint", step] if step else [])]}[args.labels_from]
    source = ["--puzzles", str(_labelled_file(args, data, step, states))] if args.labels_from in STORED else \
        ["--set", args.set, *(["--split", args.split] if args.split else [])]
    c = ["steer", "collect", "--model", target.model_path, *source,
         "--out", str(states), "--per-class", str(args.per_class), "--reward-threshold", str(args.reward_threshold),
         "--max-new-tokens", str(args.max_new_tokens), "--batch-size", str(args.batch_size),
         *(["--limit", str(args.limit)] if args.limit else []), *labels, *common]
    t = ["steer", "train", str(states), "--out", str(bank), "--hidden", args.hidden, "--epochs", str(args.epochs),
         "--lr", str(args.lr), *(["--threads", str(args.threads)] if args.threads else [])]
    states.parent.mkdir(parents=True, exist_ok=True)
    where = f"set {args.set}" + (f"/{args.split}" if args.split else "") if args.set else "every labelled puzzle"
    print(f"steer build: phase 1 of 2: {PHASES[0]} ({version}, {where}, labels from "
          f"{LABEL_SOURCES[args.labels_from]})", flush=True)
    collect(parser.parse_args(c))
    print(f"steer build: phase 2 of 2: {PHASES[1]}", flush=True)
    train(parser.parse_args(t))
    _record_origin(bank, version, target.run_id, args)
    print(f"steer build: done: {bank.name} for {version}", flush=True)
    return 0


def _labelled_file(args, data: Path, step: str | None, states: Path) -> Path:
    """The puzzles a stored label source covers, as a puzzles file beside the states (collect's input)."""
    import json

    from db.engine import open_db
    from db.runs.steer_labels import labelled_puzzles, puzzle_records
    from mvp_core.train.rundir import atomic_write
    with open_db(args.db, data)() as s:
        labels = labelled_puzzles(s, args.labels_from, args.run, int(step) if step else None, args.set,
                                  args.split, args.reward_threshold)
        records = puzzle_records(s, sorted(labels))
    out = states.with_suffix(".puzzles.jsonl")
    out.parent.mkdir(parents=True, exist_ok=True)
    atomic_write(out, "".join(json.dumps(r) + "\n" for r in records))
    return out


def _version(args, data: Path, target) -> tuple[str | None, str]:
    """(the checkpoint's step or None for the start model, the version as the Rollouts page names it:
    db/runs/index.py checkpoint_choices, "start: <model>" or "step N")."""
    from db.engine import open_db
    from db.models.runs import Checkpoint
    from db.runs.index import checkpoint_choices
    with open_db(args.db, data)() as s:
        step = None if target.checkpoint_id is None else str(s.get(Checkpoint, target.checkpoint_id).step)
        names = dict((k, label) for label, k in checkpoint_choices(s, target.run_id))
    return step, f"run {target.run_id} · {names.get(step or 'base', target.label)}"


def _record_origin(bank_file: Path, version: str, run_id: str, args) -> None:
    """Write where the bank came from into it (EnergyBank.extra), for the page's list of banks."""
    from mvp_core.steer.bank import EnergyBank
    b = EnergyBank.load(bank_file)
    b.extra = {**b.extra, "run": run_id, "checkpoint": args.checkpoint, "model_label": version,
               "set": args.set or "", "split": (args.split or "") if args.set else "",
               "labels_from": args.labels_from}
    b.save(bank_file)

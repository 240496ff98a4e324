"""`mvp import-run`: a run trained on another engine (verl, EasyR1, TRL) brought back into the studio:
its logged validation generations, each placed on its puzzle of the set it was exported from and
scored with the project's reward, and its Hugging Face checkpoints, stored as a run (db/runs/
imported.py) that the Rollouts page shows beside the studio's runs and `mvp eval --run` scores
(docs/scale.md, "Bringing a run back")."""
from __future__ import annotations

from pathlib import Path

from app.cli.args import add_db_args


def register(sub) -> None:
    from mvp_core.runs_import.readers import ENGINES
    p = sub.add_parser("import-run", help="bring back a verl / EasyR1 / TRL run: its generations and checkpoints")
    p.add_argument("--engine", required=True, choices=list(ENGINES),
                   help="; ".join(f"{k}: {v}" for k, v in ENGINES.items()))
    p.add_argument("--generations", required=True, nargs="+", metavar="PATH",
                   help="the engine's generation files or folders (see --engine)")
    p.add_argument("--set", required=True, dest="set_name", help="the curated set the run's data was exported from")
    p.add_argument("--checkpoint", action="append", default=[], metavar="[STEP=]DIR",
                   help="a Hugging Face checkpoint folder (repeatable); its step from the folder name "
                        "(checkpoint-N, global_step_N) or trainer_state.json, or given as STEP=DIR")
    p.add_argument("--base-model", help="the model the run started from (its step-0 answers are that model's)")
    p.add_argument("--name", help="run name (default ENGINE-<name of the first generations path>)")
    p.add_argument("--trained-split", default="train",
                   help="the set's split(s) the run trained on, comma-separated (default train; an export's "
                        "`validation` is the set's `val`, either name works): `mvp eval --run` leaves them out")
    add_db_args(p)
    p.set_defaults(func=_import_run)


def _import_run(args) -> int:
    from db.engine import open_db
    from db.runs.imported import store_imported_run
    from db.runs.rollouts import run_id_for
    from db.sets.curated import get_set, load_set
    from mvp_core.errors import UserError
    from mvp_core.export.formats import set_split
    from mvp_core.runs_import.checkpoints import check_hf_folder, parse_checkpoint_arg
    from mvp_core.runs_import.match import place, score_mismatches
    from mvp_core.runs_import.readers import read_generations

    # every input is checked before anything is stored
    checkpoints: dict[int, str] = {}
    for text in args.checkpoint:
        step, folder = parse_checkpoint_arg(text)
        if step in checkpoints:
            raise UserError(f"two checkpoints for step {step}: {checkpoints[step]} and {folder}")
        checkpoints[step] = str(folder)
    base = str(check_hf_folder(args.base_model)) if args.base_model else ""
    gens = read_generations(args.engine, args.generations)
    Session = open_db(args.db, args.data)
    with Session() as s:
        cs = get_set(s, args.set_name)
        set_hash, records = cs.content_hash, load_set(s, args.set_name)
    placed = place(gens, records, args.set_name)
    sources: dict[int, str] = {}
    for g in gens:
        sources.setdefault(g.step, g.file)
    run_id = run_id_for(args.name or f"{args.engine}-{Path(args.generations[0]).resolve().name}")
    splits = [set_split(x.strip()) for x in args.trained_split.split(",") if x.strip()]
    config = {"engine": args.engine, "generations": [str(Path(p).resolve()) for p in args.generations],
              "checkpoints": {str(k): v for k, v in sorted(checkpoints.items())}, "set_name": args.set_name,
              "set_hash": set_hash, "set_splits": splits}
    out = store_imported_run(Session, run_id, engine=args.engine, model_path=base, set_name=args.set_name,
                             config=config, checkpoints=checkpoints, placed=placed, sources=sources)
    mean = sum(p.row["total"] for p in placed) / len(placed)
    print(f"imported run {run_id!r} ({args.engine}): {out['answers']} answers to {out['puzzles']} puzzles of set "
          f"{args.set_name!r} at steps {', '.join(map(str, out['steps']))}; mean reward {mean:.3f}")
    if checkpoints:
        print("checkpoints: " + ", ".join(f"step {k} {v}" for k, v in sorted(checkpoints.items()))
              + f" (score one: mvp eval --run {run_id} --checkpoint STEP --set {args.set_name})")
    diff = score_mismatches(placed)
    if diff:
        print(f"note: the engine scored {diff} of them differently from the project's reward (stored: the project's)")
    return 0

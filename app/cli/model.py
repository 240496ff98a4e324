"""`mvp tiny-model`, `mvp rollout` and `mvp eval`: ask a VideoLLM to solve puzzles."""
from __future__ import annotations

import json
import sys
from pathlib import Path

from app.cli.args import add_db_args, positive_int
from mvp_core.errors import UserError


def register(sub) -> None:
    p = sub.add_parser("tiny-model", help="build a tiny random-weight Qwen2.5-VL (for demos and tests)")
    p.add_argument("out_dir", help="directory to write the model and processor into")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--family", default="qwen2_5_vl", choices=["qwen2_5_vl", "qwen2_vl", "qwen3_vl"],
                   help="model family (default qwen2_5_vl)")
    p.add_argument("--preset", default="test", choices=["test", "learn", "ci"],
                   help="test: ~1.2M params, builds in 0.1 s (default); learn: ~2.4M params, learns the "
                        "generated puzzles on 2 CPU cores in minutes; ci: ~0.7M params, the 3-minute "
                        "learning test's (docs/model.md)")
    p.set_defaults(func=_tiny_model)

    p = sub.add_parser("rollout", help="sample G answers per puzzle and store them with their rewards")
    _common(p)
    p.add_argument("-G", "--num-generations", type=int, default=8, help="answers per puzzle (default 8)")
    p.add_argument("--batch-puzzles", type=int, default=1, help="puzzles per generate call (default 1)")
    p.add_argument("--out", help="Parquet file for the answers (default DATA/rollouts/<run>.parquet)")
    p.add_argument("--no-db", action="store_true", help="write only the Parquet file")
    p.set_defaults(func=_rollout)

    p = sub.add_parser("eval", help="exact match and reward by distractor kind and hardness, with baselines")
    _common(p)
    p.add_argument("--out", help="JSON report path (a Markdown table is written next to it)")
    p.add_argument("--no-db", action="store_true", help="do not store the report in the database")
    p.add_argument("--greedy", action="store_true", default=True, help="greedy decoding (default)")
    p.add_argument("--sample", dest="greedy", action="store_false", help="sample instead of greedy decoding")
    p.add_argument("--batch-puzzles", type=positive_int, default=8,
                   help="puzzles answered per generate call (default 8; more is faster where memory allows: "
                        "32 took 0.67x the CPU time of 8 on the tiny models, the same answers: docs/BENCHMARKS.md)")
    p.set_defaults(func=_eval)


def _common(p) -> None:
    from app.cli.model_target import add_target_args
    add_target_args(p)
    src = p.add_mutually_exclusive_group(required=True)
    src.add_argument("--set", help="curated set name (from the database)")
    src.add_argument("--puzzles", help="puzzles.jsonl file (frames are read relative to --data)")
    add_db_args(p)
    p.add_argument("--limit", type=positive_int, help="use at most this many puzzles")
    p.add_argument("--device", default="cpu", help="cpu, cuda, cuda:1, ... (default cpu)")
    # Unset flags take the run's own settings with --run (a model is evaluated as it was trained),
    # else the training defaults (mvp_core.model.sampler): see docs/model.md, "Sampling".
    p.add_argument("--dtype", help="auto, float32, bfloat16, float16 (default: the run's, else auto)")
    p.add_argument("--max-new-tokens", type=int, help="default: the run's max_completion_length, else 128")
    p.add_argument("--temperature", type=float, help="default: the run's, else 1.0")
    p.add_argument("--top-p", type=float, help="default: the run's, else 1.0 (off)")
    p.add_argument("--top-k", type=int, help="default: the run's, else 0 (off)")
    p.add_argument("--min-p", type=float, help="default: the run's, else 0 (off)")
    p.add_argument("--repetition-penalty", type=float, help="default: the run's, else 1.0 (off)")
    p.add_argument("--max-pixels", type=int, help="resize each image to at most this many pixels (default: the run's)")
    p.add_argument("--video-mode", action="store_true", default=None,
                   help="show the context frames as one video (default: the run's, else images)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--threads", type=positive_int, help="torch CPU threads (1 is fastest for tiny models on a busy machine)")


def _tiny_model(args) -> int:
    from mvp_core.model.tiny import build_tiny_model
    out_dir = Path(args.out_dir)
    if out_dir.is_dir() and any(out_dir.iterdir()):   # a trained checkpoint or a model would be overwritten
        raise UserError(f"{out_dir} is not empty; give a new or empty directory")
    out = build_tiny_model(args.out_dir, seed=args.seed, family=args.family, preset=args.preset)
    print(f"tiny {args.family} model (preset {args.preset}) written to {out}")
    return 0


def load_puzzles(args) -> tuple[list[dict], Path]:
    """Puzzle records from --puzzles FILE or --set NAME, and the data directory holding their frames."""
    from db.engine import data_dir
    if args.puzzles:
        from mvp_core.jsonl import read_jsonl
        path = Path(args.puzzles)
        records = [rec for _, rec in read_jsonl(path, "puzzles file")]
        # Frame uris are relative to the data directory; by default the file's own directory.
        data = data_dir(args.data) if args.data else path.resolve().parent
    else:
        from db.engine import open_db
        from db.sets.curated import load_set
        data = data_dir(args.data)
        Session = open_db(args.db, data)
        with Session() as s:
            records = load_set(s, args.set)
    from app.cli.model_target import filter_split
    records = filter_split(records, getattr(args, "split", None), f"set {args.set!r}" if args.set else str(path))
    if not records:
        raise UserError("no puzzles to run")
    from mvp_core.puzzle import Puzzle, repeated_id
    for i, rec in enumerate(records, 1):
        try:
            Puzzle.from_dict(rec)          # runs puzzle.record_problem: its reason is the ValueError's text
        except ValueError as e:
            why = str(e)
        except (KeyError, TypeError, AttributeError) as e:
            why = f"{type(e).__name__}: {e}"
        else:
            continue
        raise UserError(f"puzzle {i} of {args.puzzles or 'set ' + repr(args.set)} is not a puzzle ({why})")
    dup = repeated_id(records)
    if dup is not None:
        raise UserError(f"{args.puzzles or 'set ' + repr(args.set)}: puzzle id {dup!r} appears twice")
    return records, data


def _set_threads(args) -> None:
    if args.threads:
        import torch
        torch.set_num_threads(args.threads)


def settings(args, run_config: dict | None = None) -> dict:
    """Prompt and sampler settings: an explicit flag, else the run's config (--run), else the
    defaults training uses."""
    from app.cli.model_target import run_setting
    from mvp_core.model import sampler as S
    run = run_config or {}
    # flag: (the run config's key, the default without a run); a run value is read (and checked)
    # only for a flag not given, so a damaged value can be overridden on the command line
    keys = {"dtype": ("bf16", False), "max_new_tokens": ("max_completion_length", 128),
            "temperature": ("temperature", S.DEFAULT_TEMPERATURE), "top_p": ("top_p", S.DEFAULT_TOP_P),
            "top_k": ("top_k", S.DEFAULT_TOP_K), "min_p": ("min_p", S.DEFAULT_MIN_P),
            "repetition_penalty": ("repetition_penalty", S.DEFAULT_REPETITION_PENALTY),
            "max_pixels": ("max_pixels", None), "video_mode": ("video_mode", False)}
    out = {}
    for k, (rk, default) in keys.items():
        if getattr(args, k, None) is not None:
            out[k] = getattr(args, k)
        elif k == "dtype":
            out[k] = "bfloat16" if str(run.get(rk, "")).lower() == "true" else "auto"   # bf16: auto|true|false
        else:
            v = run_setting(run, rk, default)
            out[k] = (v or None) if k == "max_pixels" else v
    return out


def _prompt_cfg(args, run_config: dict | None = None):
    from mvp_core.model.prompt import PromptConfig
    st = settings(args, run_config)
    return PromptConfig(video_mode=st["video_mode"], max_pixels=st["max_pixels"])


def _gen_cfg(args, n: int, greedy: bool = False, run_config: dict | None = None):
    from mvp_core.model.rollout import GenConfig
    st = settings(args, run_config)
    return GenConfig(num_generations=n, max_new_tokens=int(st["max_new_tokens"]), temperature=st["temperature"],
                     top_p=st["top_p"], top_k=int(st["top_k"]), min_p=st["min_p"],
                     repetition_penalty=st["repetition_penalty"], do_sample=not greedy, seed=args.seed)


def _rollout(args) -> int:
    from mvp_core.model.policy import load_policy
    from mvp_core.model.rollout import RolloutStats, frame_loader, run_rollouts, summarize, write_parquet

    if args.num_generations < 1:
        raise UserError("-G must be at least 1")
    from app.cli.model_target import apply_run_settings, check_trained_split, default_run_name, resolve_target
    records, data = load_puzzles(args)
    target = resolve_target(args, data)
    records = check_trained_split(args, target, records)
    records = records[: args.limit] if args.limit else records     # after the held-out filter, not before
    apply_run_settings(args, target)
    _set_threads(args)
    run_name = target.run_id or default_run_name(args)
    ck = "" if not target.run_id else f"-{target.checkpoint_id or 'base'}"
    out = Path(args.out) if args.out else data / "rollouts" / f"{run_name}{ck}.parquet"
    pcfg, gcfg = _prompt_cfg(args, target.run_config), _gen_cfg(args, args.num_generations, run_config=target.run_config)
    file_done = _answers_in(out)          # before the model loads: a bad --out is one line, not a late traceback
    model, processor = load_policy(target.model_path, dtype=settings(args, target.run_config)["dtype"],
                                   device=args.device)
    store = None if args.no_db else _rollout_store(args, data, run_name, records, target)
    # Resume from what both sinks hold, so neither ends up with a gap (the store skips keys it has).
    done = (store.done_keys() & file_done) if store else file_done
    stats = RolloutStats()
    rows: list[dict] = []

    def on_batch(new: list[dict]) -> None:
        rows.extend(new)
        if store:
            store.add(new)
    try:
        run_rollouts(model, processor, records, frame_loader(data), pcfg, gcfg, done=done, batch_puzzles=args.batch_puzzles,
                     on_batch=on_batch, progress=True, stats=stats)
    except BaseException:
        # keep what was generated; a rerun resumes after it
        write_parquet(out, rows)
        if store:
            store.finish("stopped")
        raise
    all_rows = write_parquet(out, rows)
    if store:
        store.finish("done")
    s = summarize(all_rows)
    st = stats.as_dict()
    print(f"{len(rows)} new answers, {s['answers']} stored for {s['puzzles']} puzzles in {out}"
          + (f" and run {store.run_id!r}" if store else ""))
    print("mean " + ", ".join(f"{k} {s[k]:.3f}" for k in ("total", "format", "selection", "order", "exact")))
    if rows:
        print(f"{st['answers_per_s']:.2f} answers/s; time in generation {100 * st['gen_share']:.0f}%, "
              f"scoring {100 * st['score_share']:.1f}%")
    return 0


def _answers_in(out: Path) -> set:
    """(puzzle id, sample index) pairs the Parquet file already holds; a directory or a file that is
    not this command's Parquet output is a one-line error (it was a pyarrow traceback)."""
    if out.is_dir():
        raise UserError(f"--out {out} is a directory; give a .parquet file")
    if not out.exists():
        _check_parent(out)
        return set()
    import pyarrow as pa
    import pyarrow.parquet as pq
    try:
        t = pq.read_table(out, columns=["puzzle_id", "sample_index"])
    except (pa.ArrowException, KeyError) as e:
        raise UserError(f"--out {out} is not a Parquet file of answers ({str(e).splitlines()[0]})") from None
    return set(zip(t["puzzle_id"].to_pylist(), t["sample_index"].to_pylist()))


def _rollout_store(args, data, run_name, records, target):
    from db.engine import open_db
    from db.runs.rollouts import RolloutStore
    Session = open_db(args.db, data)
    if target.run_id:
        if args.puzzles:
            from db.sets.importer import store_records
            from db.txn import run_txn
            with Session() as s:
                run_txn(s, lambda: store_records(s, records))
        return RolloutStore.for_checkpoint(Session, target.run_id, target.checkpoint_id, args.set, args.split)
    return RolloutStore(Session, run_name, model_path=str(Path(args.model).resolve()), set_name=args.set,
                        records=records if args.puzzles else None, split=args.split,
                        config={"G": args.num_generations, **settings(args),
                                "set": args.set, "puzzles": args.puzzles, "seed": args.seed})


def _eval(args) -> int:
    from app.cli.model_target import apply_run_settings, check_trained_split, resolve_target
    records, data = load_puzzles(args)
    out = _report_paths(args.out) if args.out else None
    target = resolve_target(args, data)
    records = check_trained_split(args, target, records)
    records = records[: args.limit] if args.limit else records     # after the held-out filter, not before
    apply_run_settings(args, target)
    _set_threads(args)
    # built (and so checked) before the model loads: a bad flag is a one-line error, not a late traceback
    pcfg, gcfg = _prompt_cfg(args, target.run_config), _gen_cfg(args, 1, greedy=args.greedy, run_config=target.run_config)
    # torch and transformers only once every check above has passed: a refused command answers at once
    from mvp_core.model.evaluate import evaluate, markdown_report
    from mvp_core.model.policy import load_policy
    from mvp_core.model.rollout import frame_loader
    model, processor = load_policy(target.model_path, dtype=settings(args, target.run_config)["dtype"],
                                   device=args.device)
    report = evaluate(model, processor, records, frame_loader(data), pcfg, gcfg, progress=True,
                      batch_puzzles=args.batch_puzzles)
    report["model"] = str(Path(target.model_path).resolve())
    if args.set:
        report["humans"] = _humans(args, data)
    if not args.no_db and (args.set or target.run_id):
        _store_eval(args, data, target, report)
    md = markdown_report(report) + _humans_md(report.get("humans"))
    if out:
        from mvp_core.train.rundir import atomic_write     # whole or absent: an interrupted write keeps the old file
        out[0].parent.mkdir(parents=True, exist_ok=True)
        atomic_write(out[0], json.dumps(report, indent=2))
        atomic_write(out[1], md)
        print(f"report written to {out[0]} and {out[1]}", file=sys.stderr)
    sys.stdout.write(md)
    return 0


def _report_paths(out: str) -> tuple[Path, Path]:
    """(JSON, Markdown) paths of `mvp eval --out`, checked before the model runs: a directory, a
    path through a file, or a .md name (the Markdown replaced the JSON report) failed only after the
    whole evaluation, or lost the JSON in silence."""
    js = Path(out)
    md = js.with_suffix(".md")
    if md == js:
        raise UserError(f"--out {out}: give the JSON report's path (the Markdown table is written next to it as .md)")
    for f in (js, md):
        if f.is_dir():
            raise UserError(f"--out {out}: {f} is a directory")
    _check_parent(js)
    return js, md


def _check_parent(path: Path) -> None:
    """The nearest existing folder above `path` must be a folder (missing ones are created)."""
    parent = path.parent
    while not parent.exists() and parent != parent.parent:
        parent = parent.parent
    if not parent.is_dir():
        raise UserError(f"--out {path}: {parent} is not a directory")


def _humans(args, data) -> dict:
    """The curators' blind answers on the set (split) as one more baseline (db.review.human.human_baseline)."""
    from db.engine import open_db
    from db.review.human import human_baseline
    with open_db(args.db, data)() as s:
        return human_baseline(s, args.set, getattr(args, "split", None))


def _humans_md(h: dict | None) -> str:
    if h is None:
        return ""
    if not h["puzzles"]:
        return "\nHumans (curators, blind): no curator has answered a puzzle of this set yet.\n"
    lo, hi = h["exact_ci"]
    return (f"\nHumans (curators, blind) on the {h['puzzles']} puzzles of this set they answered "
            f"({h['answers']} answers): exact {h['exact']:.3f} [{lo:.2f}, {hi:.2f}], reward {h['reward']:.3f}; "
            f"{h['possibly_ambiguous']} possibly ambiguous (most answered wrong).\n")


def _store_eval(args, data, target, report) -> None:
    """Under the run's checkpoint (--run) or the model's own run (--model with --set)."""
    from app.cli.model_target import default_run_name
    from db.engine import open_db
    from db.runs.evaluations import save_evaluation
    from db.runs.rollouts import RolloutStore
    Session = open_db(args.db, data)
    run_id = target.run_id
    if run_id is None:
        own = RolloutStore(Session, default_run_name(args), model_path=report["model"], set_name=args.set,
                           kind="eval")
        own.finish("done")
        run_id = own.run_id
    save_evaluation(Session, run_id, target.checkpoint_id, args.set or Path(args.puzzles).name, args.split, report)
    print(f"eval stored under {target.label if target.run_id else 'run ' + run_id}", file=sys.stderr)

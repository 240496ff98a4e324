"""`mvp audit [--db URL | --puzzles FILE]`: the shortcut audit (solvers with 95% intervals, flags, the
guard re-checked from the stored frames) as JSON and a readable table. Against the store it also
keeps each solver's result per puzzle (`db.puzzles.audit_results`: the gallery's audit flag)."""
from __future__ import annotations

import json
from pathlib import Path


def register(sub) -> None:
    p = sub.add_parser("audit", help="can cheap pixel heuristics solve the puzzles?")
    src = p.add_mutually_exclusive_group()
    src.add_argument("--db", help="database URL (default: SQLite in the data directory)")
    src.add_argument("--puzzles", help="a puzzles.jsonl file (frames resolved against its folder or --data)")
    p.add_argument("--data", help="data directory holding the frame store")
    p.add_argument("--json", dest="json_out", help="also write the JSON report here")
    p.add_argument("--flag-factor", type=float, default=None,
                   help="flag a solver whose exact match is above this many times chance (default 10)")
    p.set_defaults(func=run)


def run(args) -> int:
    from mvp_core.errors import UserError
    from mvp_core.jsonl import read_jsonl
    from mvp_core.puzzle import Puzzle
    from mvp_core.synth.audit import FLAG_FACTOR, audit_puzzles, format_table
    from mvp_core.video.frames import FrameStore

    Session_ = None
    if args.puzzles:
        src = Path(args.puzzles)
        if not src.is_file():
            raise UserError(f"--puzzles: no such file: {src}")
        data = Path(args.data) if args.data else src.resolve().parent
        puzzles = []
        for i, rec in read_jsonl(src, "puzzles file", "not a JSON puzzle record"):
            try:
                puzzles.append(Puzzle.from_dict(rec))
            except (ValueError, KeyError, TypeError, AttributeError) as e:
                raise UserError(f"{src}:{i}: not a puzzle record ({type(e).__name__}: {e})") from None
    else:
        from sqlalchemy import select

        from db.engine import data_dir, open_db
        from db.models import Puzzle as PuzzleRow
        data = data_dir(args.data)
        Session_ = open_db(args.db, data)
        with Session_() as s:
            puzzles = [Puzzle.from_dict(json.loads(r)) for r in
                       s.scalars(select(PuzzleRow.record_json).order_by(PuzzleRow.id))]
    if not puzzles:
        raise UserError("no puzzles to audit")
    store = FrameStore(data)
    report, results = audit_puzzles(puzzles, store.load, frame_size=lambda uri: store.path(uri).stat().st_size,
                                    flag_factor=args.flag_factor if args.flag_factor is not None else FLAG_FACTOR)
    print(format_table(report))
    if Session_ is not None:
        from db.puzzles.audit_results import store_results
        with Session_() as s:
            n = store_results(s, results)
        print(f"stored each solver's result on {n} puzzles (the gallery's audit flag)")
    text = json.dumps(report, indent=2)
    if args.json_out:
        Path(args.json_out).write_text(text + "\n")
    else:
        print(text)
    return 0

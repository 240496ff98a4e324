"""The one writer of puzzle rows: a puzzle record (docs/ARCHITECTURE.md, "Puzzle record") becomes its
`videos` row (once per video), its `puzzles` row (with the canonical JSON kept byte for byte) and
one `options` row per option. Synthesis (db/puzzles/synth_store.py) and imports (db/sets/importer.py) both
write through here; the caller owns the transaction."""
from __future__ import annotations

from sqlalchemy.orm import Session

from db.models import Option, Puzzle, Video
from mvp_core.puzzle import canonical_json


def add_video(session: Session, v: dict) -> None:
    """Insert the record's `video` object as a row (the caller checked it is not there yet)."""
    session.add(Video(id=v["id"], sha256=v["sha256"], path=v["path"], fps=v["fps"],
                      duration_s=v["duration_s"], width=v["width"], height=v["height"]))
    session.flush()   # puzzles reference it (no ORM relationship to order the inserts)


def add_puzzle(session: Session, rec: dict, params_key: str) -> None:
    """Insert one puzzle record and its options (the caller checked the id is new)."""
    session.add(Puzzle(id=rec["id"], video_id=rec["video"]["id"], params_key=params_key,
                       mask_start=rec["mask"]["start"], mask_length=rec["mask"]["length"],
                       n_options=len(rec["options"]), record_json=canonical_json(rec)))
    session.flush()
    session.add_all([Option(puzzle_id=rec["id"], label=o["label"], uri=o["uri"], t=o["t"],
                            source_video_id=o["source_video_id"], kind=o["kind"], difficulty=o["difficulty"])
                     for o in rec["options"]])

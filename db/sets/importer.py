"""Puzzle records into the database, and a jsonl set export back in as the same set (same hash).

`store_records` writes videos, puzzles and options from puzzle records (skipping ids already
present) through the one row writer, db/puzzles/rows.py; it serves imports and tests."""
from __future__ import annotations

import json
from pathlib import Path

from sqlalchemy import select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from db.chunks import in_chunks
from db.models import Puzzle, Video
from db.puzzles.rows import add_puzzle, add_video
from db.sets.curated import content_hash, store_set
from db.txn import run_txn
from mvp_core.errors import UserError
from mvp_core.jsonl import read_jsonl, read_user_text
from mvp_core.puzzle import Puzzle as PuzzleRecord
from mvp_core.puzzle import canonical_json, stable_id

MANIFEST = "set.json"
RECORDS = "puzzles.jsonl"


def params_key(params: dict) -> str:
    return stable_id("params", params)[:16]


def store_records(session: Session, records: list[dict]) -> int:
    """Insert the records' videos, puzzles and options that are not there yet; returns how many
    puzzles were added. The caller commits."""
    added = 0
    have_videos = set(session.scalars(select(Video.id)))
    for chunk in in_chunks(records):
        have = set(session.scalars(select(Puzzle.id).where(Puzzle.id.in_([r["id"] for r in chunk]))))
        for rec in chunk:
            if rec["id"] in have:
                continue
            v = rec["video"]
            if v["id"] not in have_videos:
                add_video(session, v)
                have_videos.add(v["id"])
            add_puzzle(session, rec, params_key(rec.get("params", {})))
            have.add(rec["id"])
            added += 1
        session.flush()
    return added


def read_export(path: Path) -> tuple[dict, list[str]]:
    """(manifest, canonical record lines) of a jsonl export folder, checked."""
    path = Path(path)
    if not (path / MANIFEST).is_file() or not (path / RECORDS).is_file():
        raise UserError(f"{path} is not a jsonl set export (needs {MANIFEST} and {RECORDS})")
    try:
        manifest = json.loads(read_user_text(path / MANIFEST, "set manifest"))
        if not isinstance(manifest, dict):
            raise TypeError(f"the manifest is a {type(manifest).__name__}, not an object")
        lines, seen = [], {}
        for n, rec in read_jsonl(path / RECORDS, "set records"):
            PuzzleRecord.from_dict(rec)   # validates the record's shape
            if rec["id"] in seen:         # a set holds a puzzle once (the store's unique set item)
                raise UserError(f"{path}: puzzle id {str(rec['id'])[:80]!r} appears twice in {RECORDS} "
                                f"(lines {seen[rec['id']]} and {n}); nothing was imported")
            seen[rec["id"]] = n
            lines.append(canonical_json(rec))
    except (KeyError, TypeError, AttributeError, ValueError) as e:      # ValueError: JSON and record_problem
        raise UserError(f"{path}: malformed export ({type(e).__name__}: {e})") from None
    if content_hash(lines) != manifest.get("content_hash"):
        raise UserError(f"{path}: records do not match the manifest's content hash")
    return manifest, lines


def import_set(session: Session, path: Path, data_dir: Path, name: str | None = None) -> dict:
    """Import a jsonl set export: copy its frames into the data directory, add its videos and puzzles
    (the frozen records; ids already present are kept as they are) and the set itself, same hash."""
    manifest, lines = read_export(path)
    name = name or manifest["name"]
    records = [json.loads(line) for line in lines]
    data_dir = Path(data_dir)

    def txn():
        store_records(session, records)
        cs = store_set(session, name, lines, int(manifest.get("n_excluded", 0)),
                       int(manifest.get("min_distractors", 0)), dict(manifest.get("params", {})))
        return {"name": cs.name, "content_hash": cs.content_hash, "n_puzzles": cs.n_puzzles}
    # Frames first (checked, then copied): a failure leaves the database untouched, and frames are
    # content-addressed files, so copies of a failed import are harmless.
    n_copied = copy_frames(records, Path(path), data_dir)
    try:
        out = run_txn(session, txn)       # rolled back whole on any error: nothing half-imported
    except IntegrityError as e:           # a conflict with what is stored, said in one line, not a traceback
        why = str(e.orig).strip().splitlines()[0][:200]
        raise UserError(f"{path}: the import conflicts with what is stored ({why}); nothing was imported") from None
    return {**out, "frames_copied": n_copied}


def record_uris(records: list[dict]) -> list[str]:
    uris = {f["uri"] for r in records for f in r["frames"]} | {o["uri"] for r in records for o in r["options"]}
    return sorted(uris)


def copy_frames(records: list[dict], src: Path, dst: Path) -> int:
    """Copy every frame the records name from src/<uri> to dst/<uri>, all checked before any is copied.
    Frames are content-addressed (frames/ab/<sha256>.jpg, mvp_core/video/frames.uri_for), so a uri
    must be exactly the name of its own bytes: anything else (a uri outside frames/, e.g. "mvp.sqlite",
    which would overwrite the database; a symlink to a file outside the export, e.g. a secret, whose
    bytes are not the name's) refuses the whole copy. Symlinked frame folders are fine: whatever the
    path, only bytes that hash to their name are copied (a data directory may keep frames on another disk)."""
    from mvp_core.video.frames import FrameStore, uri_for
    src_root = Path(src).resolve()
    store = FrameStore(dst)
    checked = []
    for uri in record_uris(records):
        if not isinstance(uri, str) or not uri.startswith("frames/") or "\\" in uri or ".." in Path(uri).parts:
            raise UserError(f"frame uri {uri!r} is not a frame of the store (frames/ab/<sha256>.jpg)")
        s = src_root / uri
        if not s.is_file():
            raise UserError(f"frame {uri} is missing under {src}")
        if uri_for(s.read_bytes()) != uri:
            raise UserError(f"frame {uri}: its bytes do not match its name (not a frame this project wrote)")
        checked.append(s)
    n = 0
    for s in checked:                      # read again rather than hold every frame in memory
        if not (store.root / s.relative_to(src_root)).is_file():
            store.put_bytes(s.read_bytes())    # atomic: a temporary file, then a rename
            n += 1
    return n

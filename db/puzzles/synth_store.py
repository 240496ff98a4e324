"""Storing synthesis results: one transaction per video, so a crash never leaves half a video's
puzzles; files already handled under the same parameters are recognised without reading them."""
from __future__ import annotations

import os
from pathlib import Path

from sqlalchemy import select
from sqlalchemy.orm import Session, sessionmaker

from db.models import Puzzle, SynthFile, Video
from db.puzzles.rows import add_puzzle, add_video
from mvp_core.atomic import atomic_path
from mvp_core.synth.job import VideoResult


def file_key(path: Path) -> tuple[str, int, int]:
    """(path, size, mtime_ns) of the file itself; lstat so a broken link still has a key."""
    try:
        st = os.stat(path)
    except OSError:
        st = os.lstat(path) if os.path.lexists(path) else None
    return str(path), (st.st_size if st else -1), (st.st_mtime_ns if st else -1)


def previous(session: Session, key: tuple[str, int, int], params_key: str) -> SynthFile | None:
    path, size, mtime = key
    return session.scalars(select(SynthFile).where(
        SynthFile.path == path, SynthFile.size == size, SynthFile.mtime_ns == mtime,
        SynthFile.params_key == params_key)).first()


def save_result(Session_: sessionmaker, key: tuple[str, int, int], params_key: str, res: VideoResult) -> int:
    """Store one video's outcome atomically; returns the number of new puzzles."""
    path, size, mtime = key
    added = 0
    with Session_.begin() as s:
        row = previous(s, key, params_key) or SynthFile(path=path, size=size, mtime_ns=mtime, params_key=params_key)
        row.status = "done" if res.ok else "skipped"
        row.reason = res.reason
        row.sample_fps = res.sample_fps
        row.seconds = res.seconds
        if res.ok and res.video:
            v = res.video
            video = s.get(Video, v["id"])
            if video is None:
                add_video(s, v)
            existing = set(s.scalars(select(Puzzle.id).where(Puzzle.id.in_([r["id"] for r in res.records]))))
            for rec in res.records:
                if rec["id"] in existing:  # the same content under another path
                    continue
                add_puzzle(s, rec, params_key)
                added += 1
            row.video_id = v["id"]
            if added == 0 and res.records:
                row.reason = "same content as a video already stored"
        row.n_puzzles = added
        s.add(row)
    return added


def save_skip(Session_: sessionmaker, key: tuple[str, int, int], params_key: str, reason: str) -> None:
    save_result(Session_, key, params_key, VideoResult(key[0], False, reason))


def write_jsonl(Session_: sessionmaker, out: Path) -> int:
    """All puzzles, one canonical JSON record per line, in a stable order; written atomically."""
    out.parent.mkdir(parents=True, exist_ok=True)
    n = 0
    with atomic_path(out) as tmp, Session_() as s, open(tmp, "w", encoding="utf-8") as f:
        for rec in s.scalars(select(Puzzle.record_json).order_by(Puzzle.video_id, Puzzle.id)):
            f.write(rec + "\n")
            n += 1
    return n

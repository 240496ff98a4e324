"""Shared helpers for the store benchmarks: throwaway databases and bulk synthetic puzzles.

Synthetic puzzles have the shape of real ones (7 options: 2 targets, 5 distractors of three kinds)
but a tiny record_json; they are inserted with Core executemany so 100k take seconds, not minutes."""
from __future__ import annotations

import os
import random
import tempfile
import uuid
from contextlib import contextmanager

from sqlalchemy import create_engine, insert, text
from sqlalchemy.engine import make_url

PG_URL = os.environ.get("MVP_BENCH_PG_URL", "postgresql+psycopg://postgres@127.0.0.1:5432/test")
KINDS = ["neighbor", "neighbor", "neighbor", "cross_video", "random"]


@contextmanager
def scratch_db(kind: str):
    """Yield the URL of a fresh migrated database (SQLite temp file or a new PG database); removed after."""
    from db.engine import make_engine, upgrade
    if kind == "sqlite":
        with tempfile.TemporaryDirectory() as d:
            url = f"sqlite:///{d}/bench.sqlite"
            e = make_engine(url)
            upgrade(e)
            e.dispose()
            yield url
        return
    name = f"mvp_bench_{os.getpid()}_{uuid.uuid4().hex[:6]}"
    admin = create_engine(PG_URL, isolation_level="AUTOCOMMIT")
    with admin.connect() as c:
        c.execute(text(f'CREATE DATABASE "{name}"'))
    url = make_url(PG_URL).set(database=name).render_as_string(hide_password=False)
    try:
        e = make_engine(url)
        upgrade(e)
        e.dispose()
        yield url
    finally:
        with admin.connect() as c:
            c.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
        admin.dispose()


def add_puzzles(engine, n: int, n_videos: int = 50, seed: int = 0, batch: int = 20_000) -> list[str]:
    """Insert n synthetic puzzles (and their options); returns their ids."""
    from db.models import Option, Puzzle, Video
    rng = random.Random(seed)
    vids = [f"v{i:015d}" for i in range(n_videos)]
    with engine.begin() as c:
        c.execute(insert(Video), [{"id": v, "sha256": v.ljust(64, "0"), "path": f"/videos/{v}.mp4", "fps": 25.0,
                                   "duration_s": 60.0, "width": 1280, "height": 720} for v in vids])
    ids = [f"p{i:019d}" for i in range(n)]
    for s in range(0, n, batch):
        chunk = ids[s:s + batch]
        puz, opt = [], []
        for pid in chunk:
            v = rng.choice(vids)
            puz.append({"id": pid, "video_id": v, "params_key": "bench", "mask_start": 2, "mask_length": 2,
                        "n_options": 7, "record_json": "{}"})
            labels = list("ABCDEFG")
            rng.shuffle(labels)
            for j, lab in enumerate(labels):
                kind = "target" if j < 2 else KINDS[j - 2]
                opt.append({"puzzle_id": pid, "label": lab, "uri": f"frames/{pid}/{j}.jpg", "t": float(j),
                            "source_video_id": v, "kind": kind,
                            "difficulty": 1.0 if kind == "target" else round(rng.uniform(0.3, 0.99), 3)})
        with engine.begin() as c:
            c.execute(insert(Puzzle), puz)
            c.execute(insert(Option), opt)
    return ids


def add_users(engine, n: int) -> list[int]:
    from db.models.curation import User
    with engine.begin() as c:
        c.execute(insert(User), [{"name": f"curator{i:02d}", "role": "curator", "password_hash": "x"}
                                 for i in range(n)])
        return [r[0] for r in c.execute(text("SELECT id FROM users ORDER BY id"))]

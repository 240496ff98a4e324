"""Stores for tests and benchmarks: a PostgreSQL database of their own on the shared server (created,
dropped; other users of database `test` never touched), and more puzzles cloned from the stored ones."""
from __future__ import annotations

import json
import os
import random
import uuid

from sqlalchemy import create_engine, text
from sqlalchemy.engine import make_url

PG_URL = os.environ.get("MVP_TEST_PG_URL", "postgresql+psycopg://postgres@127.0.0.1:5432/test")


def create_pg_database() -> str:
    """A new empty database on the PG_URL server; returns its URL."""
    name = f"mvp_store_{os.getpid()}_{uuid.uuid4().hex[:8]}"
    admin = create_engine(PG_URL, isolation_level="AUTOCOMMIT")
    with admin.connect() as c:
        c.execute(text(f'CREATE DATABASE "{name}"'))
    admin.dispose()
    return make_url(PG_URL).set(database=name).render_as_string(hide_password=False)


def new_database_url(engine: str, data_dir) -> str:
    """Where a new studio database goes: `data_dir`/mvp.sqlite for "sqlite", else a fresh PostgreSQL
    database (drop it with drop_pg_database)."""
    return f"sqlite:///{data_dir}/mvp.sqlite" if engine == "sqlite" else create_pg_database()


def drop_pg_database(url: str) -> None:
    name = make_url(url).database
    admin = create_engine(PG_URL, isolation_level="AUTOCOMMIT")
    with admin.connect() as c:
        c.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
    admin.dispose()


def clone_puzzles(Session, n: int) -> int:
    """Copy the stored puzzles under new ids until there are `n` (same frames, so they render and serve
    like real ones); the review queue learns them through its trigger."""
    from sqlalchemy import func, insert, select

    from db.models import Option, Puzzle
    from db.review import sync_queue
    with Session() as s:
        rows = s.scalars(select(Puzzle)).all()
        opts = {r.id: s.scalars(select(Option).where(Option.puzzle_id == r.id)).all() for r in rows}
        have = s.scalar(select(func.count()).select_from(Puzzle))
        puz, opt = [], []
        for i in range(n - have):
            r = rows[i % len(rows)]
            pid = f"c{i:05d}{r.id[6:]}"[:32]
            rec = json.loads(r.record_json)
            rec["id"] = pid
            puz.append({"id": pid, "video_id": r.video_id, "params_key": r.params_key, "mask_start": r.mask_start,
                        "mask_length": r.mask_length, "n_options": r.n_options,
                        "record_json": json.dumps(rec, sort_keys=True, separators=(",", ":"))})
            opt += [{"puzzle_id": pid, "label": o.label, "uri": o.uri, "t": o.t, "source_video_id": o.source_video_id,
                     "kind": o.kind, "difficulty": o.difficulty} for o in opts[r.id]]
        if puz:
            s.execute(insert(Puzzle), puz)
            s.execute(insert(Option), opt)
        s.commit()
        sync_queue(s)
        s.commit()
        return s.scalar(select(func.count()).select_from(Puzzle))


def store_answers(Session, run_id: str, kind: str, model_path: str, step: int, ckpt_path: str, g: int,
                  seed: int, zero_variance_first: bool = False) -> None:
    """A run with its base model and one checkpoint at `step`, G random answers of each per stored
    puzzle, each scored by the real reward (the web tests and bench/web_rollouts.py); with
    `zero_variance_first` the first puzzle's base group is G identical answers."""
    from sqlalchemy import select

    from db.models import Puzzle
    from db.models.runs import Checkpoint, Rollout, Run
    from mvp_core.reward import score_completion
    rng = random.Random(seed)
    with Session() as s:
        s.add(Run(id=run_id, name=run_id, kind=kind, model_path=model_path, config={}, status="done"))
        s.flush()
        ck = Checkpoint(run_id=run_id, step=step, path=ckpt_path)
        s.add(ck)
        s.flush()
        for n, row in enumerate(s.scalars(select(Puzzle).order_by(Puzzle.id))):
            rec = json.loads(row.record_json)
            labels = [o["label"] for o in rec["options"]]
            for cid in (None, ck.id):
                fixed = rng.sample(labels, len(rec["answer"]))
                for i in range(g):
                    same = zero_variance_first and n == 0 and cid is None
                    ch = fixed if same else rng.sample(labels, len(rec["answer"]))
                    text = f"<think>answer {i}: the motion suggests {ch[0]} first.</think><answer>{', '.join(ch)}</answer>"
                    t = score_completion(text, rec["answer"], labels)
                    s.add(Rollout(run_id=run_id, checkpoint_id=cid, puzzle_id=row.id, sample_index=i,
                                  completion=text, chosen_labels=t.labels, format=t.format, selection=t.selection,
                                  order=t.order, exact=t.exact, total=t.total, advantage=None))
        s.commit()


def accept_and_freeze(Session, records: list[dict], name: str, split: dict[str, float]) -> None:
    """Store `records`, have one curator accept every one, and freeze them as set `name` split by video
    (`split`: share per split), as a team would before training or exporting."""
    from db import review
    from db.sets.curated import freeze_set
    from db.sets.importer import store_records
    from db.users.accounts import add_user
    with Session() as s:
        store_records(s, records)
        u = add_user(s, "cur", "curator", "a-long-password-1")[0].id
        s.commit()
        for r in records:
            review.submit_verdict(s, u, r["id"], "accept")
        freeze_set(s, name, min_distractors=1, split=split)
        s.commit()

"""Store fixtures: one database per engine (SQLite file, PostgreSQL at 127.0.0.1:5432) with puzzles
made from the real sample videos.

PostgreSQL isolation: the session creates its own database (mvp_store_<pid>_<random>) on the server,
migrates it once, empties every table before each test, and drops it at the end, so other engineers'
tests using the same server (database `test`) are never touched. MVP_TEST_PG_URL overrides the
server URL (default postgresql+psycopg://postgres@127.0.0.1:5432/test)."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest
from sqlalchemy import create_engine, text
from sqlalchemy.orm import sessionmaker
from testkit.store import PG_URL, create_pg_database, drop_pg_database  # noqa: F401  (shared with bench/)

ENGINES = ["sqlite", "postgresql"]


@dataclass
class StoreDB:
    kind: str                   # "sqlite" | "postgresql"
    url: str
    engine: object
    Session: sessionmaker
    data_dir: Path
    records: list[dict]


_create_pg_database, _drop_pg_database = create_pg_database, drop_pg_database


def _migrated_pg_database():
    """Yield the URL of a fresh, migrated PostgreSQL database; drop it afterwards."""
    from db.engine import make_engine, upgrade
    url = _create_pg_database()
    eng = make_engine(url)
    upgrade(eng)
    eng.dispose()
    yield url
    _drop_pg_database(url)


@pytest.fixture(scope="session")
def store_pg_url():
    """A fresh, migrated PostgreSQL database for this test session; dropped afterwards."""
    yield from _migrated_pg_database()


@pytest.fixture(scope="session")
def store_sqlite_template(tmp_path_factory) -> Path:
    from db.engine import make_engine, upgrade
    path = tmp_path_factory.mktemp("sqlite_tpl") / "template.sqlite"
    eng = make_engine(f"sqlite:///{path}")
    upgrade(eng)
    eng.dispose()   # closing the last connection folds the WAL into the file, so a plain copy is complete
    assert not Path(f"{path}-wal").exists()
    return path


def _empty_pg(engine) -> None:
    from db.models import Base
    names = ", ".join(f'"{t.name}"' for t in Base.metadata.sorted_tables)
    with engine.begin() as c:
        c.execute(text(f"TRUNCATE {names} RESTART IDENTITY CASCADE"))


def _frames_of(path: Path, fps: float, max_side: int):
    from mvp_core.video.decode import iter_frames
    return list(iter_frames(path, fps, max_side))


def _build_records(sample_videos: dict, data_dir: Path) -> list[dict]:
    """Puzzle records (docs/ARCHITECTURE.md, "Puzzle record") from real frames of the sample videos (used while `mvp synth`
    is not available): N=6 keyframes at 4 fps, m=2 masked, l=3 distractors (two temporal neighbours
    and one frame of another video)."""
    from PIL import Image

    from mvp_core.puzzle import Frame, Mask, Option, Puzzle, VideoInfo, stable_id
    from mvp_core.video.decode import file_sha256, probe
    vids = {}
    for name in ("bigbuckbunny", "bikes", "carphone_pristine"):
        p = sample_videos[name]
        meta, sha = probe(p), file_sha256(p)
        info = VideoInfo(id=sha[:16], path=str(p), sha256=sha, fps=meta.fps, duration_s=meta.duration_s,
                         width=meta.width, height=meta.height)
        frames = []
        for i, (t, img) in enumerate(_frames_of(p, 4.0, 96)):
            uri = f"frames/{info.id}/{i:04d}.jpg"
            (data_dir / uri).parent.mkdir(parents=True, exist_ok=True)
            Image.fromarray(img).save(data_dir / uri, quality=85)
            frames.append(Frame(t=round(float(t), 3), uri=uri))
        vids[name] = (info, frames)
    records = []
    names = list(vids)
    for vi, name in enumerate(names):
        info, frames = vids[name]
        other_info, other_frames = vids[names[(vi + 1) % len(names)]]
        for s in range(0, len(frames) - 9, 3)[:5]:
            seq = frames[s:s + 6]
            targets = seq[2:4]
            neigh = [frames[s + 6], frames[s + 7]]
            cross = other_frames[s % len(other_frames)]
            pool = ([("target", f, info.id, 1.0) for f in targets]
                    + [("neighbor", f, info.id, round(0.9 - 0.1 * j, 3)) for j, f in enumerate(neigh)]
                    + [("cross_video", cross, other_info.id, 0.5)])
            order = sorted(range(len(pool)), key=lambda j: stable_id(info.id, s, j))
            opts = [Option(label=chr(65 + i), uri=pool[j][1].uri, t=pool[j][1].t, source_video_id=pool[j][2],
                           kind=pool[j][0], difficulty=pool[j][3]) for i, j in enumerate(order)]
            answer = [o.label for f in targets for o in opts if o.kind == "target" and o.uri == f.uri]
            params = {"fps": 4.0, "N": 6, "m": 2, "l": 3, "kappa": 0.95, "embedder": "pixel", "seed": s,
                      "synth_version": "test"}
            pz = Puzzle(id=stable_id(info.id, params), video=info, frames=seq, mask=Mask(start=2, length=2),
                        options=opts, answer=answer, params=params, sample_fps=4.0)
            records.append(pz.to_dict())
    return records


def _synth_records(sample_videos: dict, data_dir: Path, trailer_clips: dict) -> list[dict] | None:
    """Puzzles made by the real `mvp synth`."""
    vdir = data_dir.parent / "videos"
    vdir.mkdir(exist_ok=True)
    for name in ("bikes", "carphone_pristine"):
        shutil.copy(sample_videos[name], vdir / f"{name}.mp4")
    for name, path in trailer_clips.items():
        shutil.copy(path, vdir / f"{name}.mp4")
    db = data_dir / "synth.sqlite"
    cmd = [sys.executable, "-m", "app.cli", "synth", str(vdir), "--data", str(data_dir),
           "--db", f"sqlite:///{db}", "--per-video", "4"]
    res = subprocess.run(cmd, cwd=Path(__file__).resolve().parent.parent, capture_output=True, text=True, timeout=600)
    if res.returncode != 0:
        raise RuntimeError(f"mvp synth failed:\n{res.stdout}\n{res.stderr}")
    eng = create_engine(f"sqlite:///{db}")
    with eng.connect() as c:
        import json
        recs = [json.loads(r[0]) for r in c.execute(text("SELECT record_json FROM puzzles ORDER BY id"))]
    eng.dispose()
    return recs or None


@pytest.fixture(scope="session")
def store_puzzles(sample_videos, trailer_clips, tmp_path_factory) -> tuple[Path, list[dict]]:
    """(data_dir, records): puzzles over the real sample videos, made once per test run (tests/build_once.py);
    each session gets its own copy of the data directory."""
    import json

    from build_once import build_once

    def build(out: Path) -> None:
        data_dir = out / "data"
        data_dir.mkdir()
        # The real `mvp synth` output by default; MVP_STORE_SYNTH=0 (or no synth command) uses records
        # built here from the same videos' real frames, which is faster.
        records = (_synth_records(sample_videos, data_dir, trailer_clips) if os.environ.get("MVP_STORE_SYNTH") != "0"
                   else None)
        if records is None:
            records = _build_records(sample_videos, data_dir)
        (out / "records.json").write_text(json.dumps(records))
    built = build_once(tmp_path_factory, "store-puzzles", build)
    data_dir = tmp_path_factory.mktemp("store_data") / "data"
    shutil.copytree(built / "data", data_dir)
    return data_dir, json.loads((built / "records.json").read_text())


def open_store(kind: str, tmp_path: Path, store_sqlite_template, pg_url: str | None):
    from db.engine import make_engine
    if kind == "sqlite":
        path = tmp_path / "store.sqlite"
        shutil.copy(store_sqlite_template, path)
        url = f"sqlite:///{path}"
        eng = make_engine(url)
    else:
        url = pg_url
        eng = make_engine(url)
        _empty_pg(eng)
    return url, eng


@pytest.fixture(params=ENGINES)
def store_db(request, tmp_path, store_sqlite_template, store_puzzles):
    """An empty, migrated database of each engine holding the sample puzzles."""
    from db.sets.importer import store_records
    pg_url = request.getfixturevalue("store_pg_url") if request.param == "postgresql" else None
    url, eng = open_store(request.param, tmp_path, store_sqlite_template, pg_url)
    Session = sessionmaker(eng, expire_on_commit=False)
    data_dir, records = store_puzzles
    with Session() as s:
        store_records(s, records)
        s.commit()
    yield StoreDB(request.param, url, eng, Session, data_dir, records)
    eng.dispose()


@pytest.fixture(scope="session")
def store_pg_url2():
    """A second PostgreSQL database (import targets: "an empty database")."""
    yield from _migrated_pg_database()


@pytest.fixture
def empty_store(store_db, request, tmp_path, store_sqlite_template):
    """A second database of the same engine as `store_db`, migrated and empty."""
    pg_url = request.getfixturevalue("store_pg_url2") if store_db.kind == "postgresql" else None
    d = tmp_path / "empty"
    d.mkdir()
    url, eng = open_store(store_db.kind, d, store_sqlite_template, pg_url)
    yield StoreDB(store_db.kind, url, eng, sessionmaker(eng, expire_on_commit=False), d / "data", [])
    eng.dispose()


@pytest.fixture(params=ENGINES)
def empty_store_any(request, tmp_path, store_sqlite_template):
    """An empty, migrated database of each engine, on its own (no sample puzzles needed)."""
    pg_url = request.getfixturevalue("store_pg_url") if request.param == "postgresql" else None
    url, eng = open_store(request.param, tmp_path, store_sqlite_template, pg_url)
    yield StoreDB(request.param, url, eng, sessionmaker(eng, expire_on_commit=False), tmp_path / "data", [])
    eng.dispose()

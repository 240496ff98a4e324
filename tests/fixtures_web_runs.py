"""A studio started from an empty data directory for the runs/rollouts browser tests: `mvp synth`
over two real sample videos, users made by `mvp users add`, the tiny model by `mvp tiny-model`,
then `mvp serve` on a free port. Session-scoped: the e2e test and the page benchmarks share it
(and the run the e2e test trains)."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
import urllib.request
from dataclasses import dataclass
from pathlib import Path

import pytest
from fixtures_web import PASSWORDS, ROLES, free_port

ROOT = Path(__file__).resolve().parent.parent


@dataclass
class Studio:
    url: str
    data_dir: Path
    db_url: str
    Session: object
    shared: dict            # what one test leaves for the next (the trained run's id)


def _mvp(*argv, timeout=600) -> str:
    env = dict(os.environ, PYTHONPATH=str(ROOT), OMP_NUM_THREADS="1")
    res = subprocess.run([sys.executable, "-m", "app.cli", *map(str, argv)], check=False, cwd=ROOT,
                         capture_output=True, text=True, timeout=timeout, env=env)
    assert res.returncode == 0, res.stdout + res.stderr
    return res.stdout


@pytest.fixture(scope="session")
def studio(sample_videos, trailer_clips, tmp_path_factory):
    from db.engine import open_db
    base = tmp_path_factory.mktemp("studio")
    videos, data = base / "videos", base / "data"
    videos.mkdir()
    # bigbuckbunny (a slow pan) yields no puzzle since near-duplicates are refused: a trailer segment instead
    shutil.copy(trailer_clips["trailer_a"], videos / "trailer_a.mp4")
    shutil.copy(sample_videos["bikes"], videos / "bikes.mp4")
    db_url = f"sqlite:///{data / 'mvp.sqlite'}"
    _mvp("synth", videos, "--data", data, "--db", db_url, "--per-video", "3", "--quiet")
    from app.cli import main
    for name, pw in PASSWORDS.items():      # in this process: the same command, no interpreter start-up
        assert main(["users", "add", name, "--role", ROLES[name], "--password", pw, "--data", str(data),
                     "--db", db_url]) == 0
    _mvp("tiny-model", data / "tiny-model")
    port = free_port()
    log = open(base / "serve.log", "w")      # noqa: SIM115 (kept open for the server's lifetime)
    env = dict(os.environ, PYTHONUNBUFFERED="1")
    proc = subprocess.Popen([sys.executable, "-m", "app.cli", "serve", "--data", str(data), "--db", db_url,
                             "--host", "127.0.0.1", "--port", str(port)], cwd=ROOT, stdout=log,
                            stderr=subprocess.STDOUT, env=env)
    url = f"http://127.0.0.1:{port}"
    deadline = time.time() + 300            # the whole app imports in ~1 min on a loaded machine
    while True:
        try:
            urllib.request.urlopen(url + "/login", timeout=2)
            break
        except OSError:
            if proc.poll() is not None or time.time() > deadline:
                raise RuntimeError("mvp serve did not start:\n" + (base / "serve.log").read_text())
            time.sleep(0.3)
    yield Studio(url, data, db_url, open_db(db_url, data), {})
    proc.terminate()
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        proc.kill()
    log.close()
    from app.web import jobs
    for kind in jobs.KINDS:                       # no job outlives the session
        jobs.stop(data, grace_s=5, kind=kind)

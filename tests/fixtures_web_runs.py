"""A studio for the runs/rollouts browser tests: a data directory holding `mvp synth`'s output over two
real sample videos (tests/fixtures_web.py two_video_synth), users made by `mvp users add`, the tiny model
by `mvp tiny-model`, then `mvp serve` on a free port. Session-scoped: the e2e test and the page benchmarks share it
(and the run the e2e test trains)."""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pytest
from fixtures_web import PASSWORDS, ROLES, Server, copy_data_dir, free_port, two_video_synth
from testkit.cli import run_mvp_here

ROOT = Path(__file__).resolve().parent.parent


@dataclass
class Studio:
    url: str
    data_dir: Path
    db_url: str
    Session: object
    shared: dict            # what one test leaves for the next (the trained run's id)


@pytest.fixture(scope="session")
def studio(sample_videos, trailer_clips, tmp_path_factory):
    from db.engine import open_db
    base = tmp_path_factory.mktemp("studio")
    data = base / "data"
    db_url = f"sqlite:///{data / 'mvp.sqlite'}"
    copy_data_dir(two_video_synth(sample_videos, trailer_clips, tmp_path_factory), data)    # `mvp synth`'s output
    from app.cli import main
    for name, pw in PASSWORDS.items():      # in this process: the same command, no interpreter start-up
        assert main(["users", "add", name, "--role", ROLES[name], "--password", pw, "--data", str(data),
                     "--db", db_url]) == 0
    run_mvp_here("tiny-model", data / "tiny-model", check=True)
    srv = Server(data, db_url, free_port(), base / "serve.log").start()
    yield Studio(srv.url, data, db_url, open_db(db_url, data), {})
    srv.stop()
    from app.web import jobs
    for kind in jobs.KINDS:                       # no job outlives the session
        jobs.stop(data, grace_s=5, kind=kind)

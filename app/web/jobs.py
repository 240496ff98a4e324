"""Training runs launched from the web app: `mvp train` as a detached subprocess (its own session
and process group, output to files), one at a time, re-attachable after a page reload or a
server restart, stoppable as a whole process tree.

State lives in files under DATA/train/: `active.json` names the current run (run directory, pid,
process group, who launched it); the run directory itself holds status.json / metrics.jsonl /
stdout.log written by the trainer, and console.log (the process's stdout and stderr)."""
from __future__ import annotations

import fcntl
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from mvp_core.errors import UserError

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_CONFIG = ROOT / "configs" / "tiny.yaml"
_CHILDREN: dict[int, subprocess.Popen] = {}     # processes this server started (reaped on poll)


def jobs_dir(data_dir: Path) -> Path:
    d = Path(data_dir) / "train"
    d.mkdir(parents=True, exist_ok=True)
    return d


def group_pids(pgid: int) -> list[int]:
    """Live (non-zombie) processes in process group `pgid`, from /proc."""
    out = []
    for p in Path("/proc").iterdir():
        if not p.name.isdigit():
            continue
        try:
            stat = (p / "stat").read_text()
        except OSError:
            continue
        # fields after the ")" of the command name: state ppid pgrp ...
        rest = stat[stat.rfind(")") + 2:].split()
        if len(rest) > 2 and rest[0] != "Z" and int(rest[2]) == pgid:
            out.append(int(p.name))
    return out


def _reap(pid: int, wait_s: float = 0.0) -> None:
    """Collect the exit status of a run this server started, so no zombie is left behind (after a
    server restart the run is not our child and init collects it)."""
    child = _CHILDREN.get(pid)
    if child is None:
        return
    try:
        child.wait(timeout=wait_s) if wait_s else child.poll()
    except subprocess.TimeoutExpired:
        return
    if child.returncode is not None:
        _CHILDREN.pop(pid, None)


def active(data_dir: Path) -> dict | None:
    """The current (or last) launched run: active.json plus `alive` (any process of its group left)
    and the trainer's status.json. None when nothing was ever launched."""
    f = jobs_dir(data_dir) / "active.json"
    try:
        job = json.loads(f.read_text())
    except (OSError, json.JSONDecodeError):
        return None
    _reap(job["pid"])
    job["alive"] = bool(group_pids(job["pgid"]))
    from mvp_core.grpo.rundir import read_status
    job["status"] = read_status(job["run_dir"])
    return job


def launch(data_dir: Path, Session, *, set_name: str, model: str, yaml_text: str, overrides: list[str],
           user: str) -> dict:
    """Validate the settings, snapshot the set into a new run directory and start `mvp train`.
    Refused while another launched run is alive."""
    from db.sets import set_lines
    from mvp_core.config import parse_overrides, parse_yaml_mapping
    from mvp_core.grpo.config import GRPOConfig

    data_dir = Path(data_dir)
    if not set_name:
        raise UserError("choose a curated set")
    if not model:
        raise UserError("give a model path")
    base = parse_yaml_mapping(yaml_text or "", "config")
    with open(jobs_dir(data_dir) / "lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)          # two clicks at once still start one run
        cur = active(data_dir)
        if cur and cur["alive"]:
            raise UserError(f"a run is already going ({Path(cur['run_dir']).name}); stop it first")
        run_dir = data_dir / "runs" / f"{time.strftime('%Y%m%d-%H%M%S')}-{_slug(set_name)}"
        fixed = [f"model={model}", f"output_dir={run_dir}", f"puzzles={run_dir / 'puzzles.jsonl'}",
                 f"data_dir={data_dir}", f"set_name={set_name}"]
        cfg = GRPOConfig.from_values(base, parse_overrides(overrides + fixed))
        with Session() as s:
            lines = set_lines(s, set_name)
        if not lines:
            raise UserError(f"curated set {set_name!r} holds no puzzles")
        run_dir.mkdir(parents=True)
        (run_dir / "puzzles.jsonl").write_text("".join(line + "\n" for line in lines))
        (run_dir / "launch.yaml").write_text(cfg.to_yaml())
        cmd = [sys.executable, "-m", "app.cli", "train", str(run_dir / "launch.yaml")]
        env = dict(os.environ, PYTHONPATH=str(ROOT), PYTHONUNBUFFERED="1")
        with open(run_dir / "console.log", "ab") as out:
            proc = subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT,
                                    stdin=subprocess.DEVNULL, start_new_session=True)
        _CHILDREN[proc.pid] = proc
        job = {"run_dir": str(run_dir), "pid": proc.pid, "pgid": os.getpgid(proc.pid), "set": set_name,
               "model": model, "user": user, "started": time.time(), "cmd": cmd}
        tmp = jobs_dir(data_dir) / ".active.json.tmp"
        tmp.write_text(json.dumps(job))
        os.replace(tmp, jobs_dir(data_dir) / "active.json")
    return job


def stop(data_dir: Path, grace_s: float = 30.0) -> str:
    """SIGTERM the run's whole process group (the trainer saves a checkpoint and exits), then
    SIGKILL whatever is left after `grace_s`. Returns a one-line outcome."""
    job = active(data_dir)
    if not job or not job["alive"]:
        return "no run is going"
    pgid = job["pgid"]
    _signal_group(pgid, signal.SIGTERM)
    deadline = time.time() + grace_s
    while time.time() < deadline:
        _reap(job["pid"])
        if not group_pids(pgid):
            _reap(job["pid"], wait_s=5.0)
            return f"stopped {Path(job['run_dir']).name} (checkpoint saved)"
        time.sleep(0.2)
    _signal_group(pgid, signal.SIGKILL)
    for _ in range(50):
        _reap(job["pid"])
        if not group_pids(pgid):
            _reap(job["pid"], wait_s=5.0)
            break
        time.sleep(0.1)
    return f"killed {Path(job['run_dir']).name} (it did not stop within {grace_s:.0f}s)"


def _signal_group(pgid: int, sig) -> None:
    try:
        os.killpg(pgid, sig)
    except ProcessLookupError:
        pass


def _slug(name: str) -> str:
    return "".join(c if c.isalnum() or c in "-_" else "-" for c in name)[:40] or "set"


def log_tail(run_dir: str | Path, n: int = 40) -> str:
    """The last n lines of the process output (console.log holds the trainer's lines and any
    traceback)."""
    f = Path(run_dir) / "console.log"
    try:
        with open(f, "rb") as fh:
            fh.seek(0, 2)
            size = fh.tell()
            fh.seek(max(0, size - 64 * 1024))
            text = fh.read().decode("utf-8", "replace")
    except OSError:
        return ""
    lines = [ln for ln in text.splitlines() if "it/s]" not in ln]   # drop progress-bar noise
    return "\n".join(lines[-n:])

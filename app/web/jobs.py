"""Background jobs launched from the web app: training (`mvp train` / `mvp sft`), rollouts and evals
(`mvp rollout` / `mvp eval` of a run's checkpoint), each a detached subprocess (its own session and
process group, output to files), one at a time per kind, re-attachable after a page reload or a
server restart, stoppable as a whole process tree by whoever launched it or an admin.

State lives in files: DATA/train/active.json names the current training run (run directory, pid,
process group, who launched it; the run directory holds status.json / metrics.jsonl / stdout.log
written by the trainer, and console.log, the process's stdout and stderr); DATA/jobs/<kind>/ holds
the same for rollout and eval jobs, with the job's console log beside it. Processes are found with
psutil (by process group), never by scanning /proc by hand.

Secrets (docs/security.md, "Secrets"): a job's database URL (with PostgreSQL, its password) is handed
over in the environment (MVP_DATABASE_URL, readable by the service's own user only), never on the
command line (`ps` shows it to every user) nor in active.json; active.json and the logs are 0600.
Paths a user typed (the model, a config's eval_puzzles / eval_data_dir) must lie inside the data
directory or an admin's allowed folders (mvp_core/roots.py) before anything opens them, and a file among
them may not be the store (app/web/files.py `not_the_store`: the database, its WAL, a link or a copy)."""
from __future__ import annotations

import contextlib
import fcntl
import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import psutil
import yaml

from app.web.files import not_the_store
from mvp_core import resources
from mvp_core.atomic import atomic_path
from mvp_core.errors import UserError
from mvp_core.roots import inside_roots

ROOT = Path(__file__).resolve().parents[2]   # the repository root
DEFAULT_CONFIG = resources.config("web.yaml")   # trains on the real MVP reward
SFT_CONFIG = resources.config("web-sft.yaml")
KINDS = ("train", "rollout", "eval", "synth", "steer", "playground")
# Stop: SIGTERM, then SIGKILL after this long. A trainer saves its checkpoint between steps; one stuck
# in a long generation (or ignoring SIGTERM) is killed, so Stop always ends a run within seconds.
STOP_GRACE_S = 5.0
_CHILDREN: dict[int, subprocess.Popen] = {}     # processes this server started (reaped on poll)


def jobs_dir(data_dir: Path, kind: str = "train") -> Path:
    if kind not in KINDS:
        raise ValueError(f"unknown job kind {kind!r}")
    d = Path(data_dir) / ("train" if kind == "train" else f"jobs/{kind}")
    d.mkdir(parents=True, exist_ok=True)
    return d


def group_pids(pgid: int) -> list[int]:
    """Live (non-zombie) processes in process group `pgid`."""
    out = []
    for p in psutil.process_iter():
        try:
            if os.getpgid(p.pid) == pgid and p.status() != psutil.STATUS_ZOMBIE:
                out.append(p.pid)
        except (psutil.Error, ProcessLookupError, PermissionError):
            continue
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


def _wait_for(proc: subprocess.Popen) -> None:
    """Collect a job's exit status the moment it ends, so no <defunct> process waits for someone to
    poll the job's page (Popen's waits are locked: `_reap` may wait on it at the same time)."""
    proc.wait()
    _CHILDREN.pop(proc.pid, None)


def active(data_dir: Path, kind: str = "train") -> dict | None:
    """The current (or last) job of a kind: its active.json plus `alive` (any process of its group
    left) and, for training, the trainer's status.json; for rollout/eval the progress parsed from
    the console log. None when nothing of that kind was ever launched."""
    f = jobs_dir(data_dir, kind) / "active.json"
    try:
        job = json.loads(f.read_text(encoding="utf-8"))
    except (OSError, ValueError):            # missing, torn, or not UTF-8 / JSON
        return None
    if not isinstance(job, dict) or not all(isinstance(job.get(k), int) for k in ("pid", "pgid")):
        return None              # not a job this server wrote (hand-edited or truncated)
    _reap(job["pid"])
    job["alive"] = bool(group_pids(job["pgid"]))
    if kind == "train":
        from mvp_core.train.rundir import read_status
        job["status"] = read_status(job["run_dir"])
    else:
        job["progress"] = progress(job["log"])
        job["status"] = {"state": "running" if job["alive"] else _exit_state(job)}
    return job


def launch(data_dir: Path, Session, *, set_name: str, model: str, yaml_text: str, overrides: list[str],
           user: str, trainer: str = "grpo", train_splits: tuple[str, ...] = ("train",)) -> dict:
    """Validate the settings (model directory included), snapshot the set into a new run directory
    and start `mvp train` (GRPO) or `mvp sft`. Refused while another training run is alive; a
    refused launch leaves no run directory behind."""
    from app.web.models_known import check_model
    from db.sets.curated import snapshot_set
    from mvp_core.config import parse_overrides, parse_yaml_mapping
    from mvp_core.train.config import GRPOConfig
    from mvp_core.train.sft_config import SFTConfig

    data_dir = Path(data_dir)
    if not set_name:
        raise UserError("choose a curated set")
    if not model or not str(model).strip():
        check_model(model)                       # its one line: choose a model
    roots = server_roots(Session, data_dir)
    inside_roots(roots, model, "model", "any")   # before anything opens it
    check_model(model)
    if trainer not in ("grpo", "sft"):
        raise UserError(f"trainer must be grpo or sft, not {trainer!r}")
    base = parse_yaml_mapping(yaml_text or "", "config")
    with _train_slot(data_dir):
        run_dir = data_dir / "runs" / f"{time.strftime('%Y%m%d-%H%M%S')}-{trainer}-{_slug(set_name)}"
        fixed = [f"model={model}", f"output_dir={run_dir}", f"puzzles={run_dir / 'puzzles.jsonl'}",
                 f"data_dir={data_dir}", f"set_name={set_name}"]
        cfg = (SFTConfig if trainer == "sft" else GRPOConfig).from_values(base, parse_overrides(overrides + fixed))
        for key, kind in USER_PATH_KEYS.items():  # the rest of the path keys are the fixed ones above
            if getattr(cfg, key):
                real = inside_roots(roots, getattr(cfg, key), key, kind)
                if kind == "file":                # never the store itself: refused here, not by the trainer
                    not_the_store(data_dir, real, key)
        # refuses an empty or unknown set; only the train split unless named (held-out splits stay unseen)
        with Session() as s:
            _, cfg.set_hash, kept = snapshot_set(s, set_name, run_dir / "puzzles.jsonl", tuple(train_splits))
        cfg.set_splits = list(kept)
        (run_dir / "launch.yaml").write_text(cfg.to_yaml())
        cmd = [sys.executable, "-m", "app.cli", "train" if trainer == "grpo" else "sft",
               str(run_dir / "launch.yaml")]
        job = _spawn(data_dir, "train", cmd, run_dir / "console.log",
                     {"run_dir": str(run_dir), "set": set_name, "model": model, "user": user,
                      "trainer": trainer, "settings": {"overrides": overrides}})
    return job


@contextlib.contextmanager
def _train_slot(data_dir: Path):
    """The one training run at a time: held while a launch or a resume checks and starts its run
    (two clicks at once still start one), refused while another run is alive."""
    with open(jobs_dir(data_dir) / "lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        cur = active(data_dir)
        if cur and cur["alive"]:
            raise UserError(f"a run is already going ({Path(cur['run_dir']).name}); stop it first")
        yield


RESUMABLE = ("stopped", "failed")


def resumable(run_dir: str | Path) -> tuple[int, str] | None:
    """(latest complete checkpoint's step, trainer) of a stopped or failed run directory, else None."""
    from mvp_core.train.rundir import RunDir, read_status
    d = RunDir(run_dir)
    if read_status(d.path).get("state") not in RESUMABLE or not d.config_file.is_file():
        return None
    last = d.latest_checkpoint()
    if last is None:
        return None
    cfg = yaml.safe_load(d.config_file.read_text(encoding="utf-8")) or {}
    return last[0], "sft" if str(cfg.get("trainer", "grpo")).lower() == "sft" else "grpo"


def resume(data_dir: Path, run_dir: str | Path, *, user: str) -> dict:
    """Continue a stopped (or failed) run of DATA/runs/ from its latest checkpoint: `mvp train` (or
    `mvp sft`) on the run's own config with --resume, in the same run directory (the trainer drops
    metrics past the checkpoint and keeps the run's puzzle snapshot, mvp_core/train/lifecycle.py)."""
    data_dir = Path(data_dir)
    run_dir = Path(run_dir).resolve()
    if run_dir.parent != (data_dir / "runs").resolve():
        raise UserError(f"{run_dir.name}: only runs in the data directory's runs/ can be resumed here")
    found = resumable(run_dir)
    if found is None:
        raise UserError(f"{run_dir.name} is not a stopped run with a checkpoint: nothing to resume")
    step, trainer = found
    config = run_dir / "launch.yaml" if (run_dir / "launch.yaml").is_file() else run_dir / "config.yaml"
    cfg = yaml.safe_load(config.read_text(encoding="utf-8")) or {}
    with _train_slot(data_dir):
        cmd = [sys.executable, "-m", "app.cli", "train" if trainer == "grpo" else "sft", str(config),
               f"output_dir={run_dir}", "--resume"]
        # the same fields a launch records: the Train page's status line and form read them
        return _spawn(data_dir, "train", cmd, run_dir / "console.log",
                      {"run_dir": str(run_dir), "set": str(cfg.get("set_name") or ""),
                       "model": str(cfg.get("model") or ""), "user": user, "trainer": trainer,
                       "resumed_from": step})


# Path keys of a training config a user may set (the Train page's YAML), and what each must name; the
# other path keys (puzzles, data_dir, output_dir) are fixed by launch().
USER_PATH_KEYS = {"model": "dir", "eval_puzzles": "file", "eval_data_dir": "dir"}


def server_roots(Session, data_dir: Path) -> list[str]:
    """Where paths a user names may lie: the data directory, then the admin's allowed folders."""
    from db.puzzles.sources import allowed_roots
    with Session() as s:
        return [str(Path(data_dir).resolve()), *allowed_roots(s)]


MAX_G = 64                  # answers per puzzle a rollout job may ask for (GRPO's groups are 4-16)
MAX_NEW_TOKENS = 4096       # answer length cap of a rollout or eval job


def launch_eval(data_dir: Path, db_url: str, *, kind: str, run_id: str, checkpoint: str, set_name: str,
                split: str, user: str, num_generations: int = 8, max_new_tokens: int = 24,
                limit: int | None = None, allow_trained_split: bool = False) -> dict:
    """Start `mvp rollout` (G sampled answers per puzzle) or `mvp eval` (one greedy answer, the
    report with baselines) of a run's checkpoint on a set split; one job of each kind at a time.
    `allow_trained_split`: the user asked to score a split the run trained on (--allow-trained-split)."""
    if kind not in ("rollout", "eval"):
        raise UserError(f"job kind must be rollout or eval, not {kind!r}")
    if not run_id or not checkpoint:
        raise UserError("choose a run and a checkpoint")
    if not set_name:
        raise UserError("choose a curated set")
    for name, v, lo, hi in (("G", num_generations, 1, MAX_G), ("max new tokens", max_new_tokens, 1, MAX_NEW_TOKENS),
                            ("at most N puzzles", limit or 0, 0, 10 ** 9)):
        if not lo <= v <= hi:     # a job that would run for days is refused here, not stopped later
            raise UserError(f"{name} must be in [{lo}, {hi}], got {v}")
    data_dir = Path(data_dir)
    with open(jobs_dir(data_dir, kind) / "lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        cur = active(data_dir, kind)
        if cur and cur["alive"]:
            raise UserError(f"a {kind} job is already going ({cur['label']}); stop it first")
        cmd = [sys.executable, "-m", "app.cli", kind, "--run", run_id, "--checkpoint", checkpoint,
               "--set", set_name, "--data", str(data_dir), "--db", db_url, "--threads", "1",
               "--max-new-tokens", str(int(max_new_tokens))]
        if split:
            cmd += ["--split", split] + (["--allow-trained-split"] if allow_trained_split else [])
        if kind == "rollout":
            cmd += ["-G", str(int(num_generations))]
        if limit:
            cmd += ["--limit", str(int(limit))]
        label = f"{run_id} · {'base' if checkpoint == 'base' else 'step ' + checkpoint} · {set_name}" + \
            (f"/{split}" if split else "")
        log = jobs_dir(data_dir, kind) / f"{time.strftime('%Y%m%d-%H%M%S')}-{_slug(run_id)}.log"
        return _spawn(data_dir, kind, cmd, log, {"run_id": run_id, "checkpoint": checkpoint, "set": set_name,
                                                 "split": split, "user": user, "label": label})


def launch_cli(data_dir: Path, kind: str, args: list[str], *, user: str, label: str,
               meta: dict | None = None) -> dict:
    """Start `mvp ARGS...` as the one job of `kind` (e.g. "synth" from the Data page), refused while
    another job of that kind is alive; its progress and summary come from its log like any job's."""
    if kind == "train":
        raise UserError("training runs start through launch()")
    data_dir = Path(data_dir)
    with open(jobs_dir(data_dir, kind) / "lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        cur = active(data_dir, kind)
        if cur and cur["alive"]:
            raise UserError(f"a {kind} job is already going ({cur['label']}); wait for it or stop it")
        log = jobs_dir(data_dir, kind) / f"{time.strftime('%Y%m%d-%H%M%S')}-{_slug(label)}.log"
        return _spawn(data_dir, kind, [sys.executable, "-m", "app.cli", *args], log,
                      {**(meta or {}), "user": user, "label": label})


def without_db_url(cmd: list[str]) -> tuple[list[str], dict[str, str]]:
    """(`cmd` without its `--db URL`, the environment that hands the URL over instead): the CLI reads
    MVP_DATABASE_URL when --db is absent (db/engine.py `database_url`)."""
    out, env = [], {}
    i = 0
    while i < len(cmd):
        if cmd[i] == "--db" and i + 1 < len(cmd):
            env["MVP_DATABASE_URL"] = cmd[i + 1]
            i += 2
            continue
        if cmd[i].startswith("--db="):
            env["MVP_DATABASE_URL"] = cmd[i][len("--db="):]
        else:
            out.append(cmd[i])
        i += 1
    return out, env


def _private(path: Path, flags: int):
    """An open file descriptor on `path` created 0600 (only the service's user may read it)."""
    fd = os.open(path, flags | os.O_CREAT, 0o600)
    os.fchmod(fd, 0o600)          # an older file made before this rule
    return fd


def _write_private(path: Path, text: str) -> None:
    """atomic_write_text, readable by the service's user only."""
    with atomic_path(path) as tmp:
        with os.fdopen(_private(tmp, os.O_WRONLY | os.O_TRUNC), "w", encoding="utf-8") as fh:
            fh.write(text)


def _spawn(data_dir: Path, kind: str, cmd: list[str], log: Path, meta: dict) -> dict:
    """Start `cmd` in its own session (so the whole tree can be signalled), output appended to
    `log`, and record it as the kind's active job (atomically: a reader sees the old or the new).
    A database URL leaves the command line for the environment (secrets out of `ps`)."""
    cmd, secret_env = without_db_url(cmd)
    env = dict(os.environ, PYTHONPATH=str(ROOT), PYTHONUNBUFFERED="1", **secret_env)
    with os.fdopen(_private(Path(log), os.O_WRONLY | os.O_APPEND), "ab") as out:
        proc = subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT,
                                stdin=subprocess.DEVNULL, start_new_session=True)
    _CHILDREN[proc.pid] = proc
    threading.Thread(target=_wait_for, args=(proc,), name=f"reap-{proc.pid}", daemon=True).start()
    job = {**meta, "kind": kind, "pid": proc.pid, "pgid": os.getpgid(proc.pid), "log": str(log),
           "started": time.time(), "cmd": cmd}
    _write_private(jobs_dir(data_dir, kind) / "active.json", json.dumps(job))
    return job


def _exit_state(job: dict) -> str:
    """done / failed / stopped for a finished rollout or eval job, from the end of its log."""
    if job.get("stopped_by"):
        return "stopped"
    tail = log_tail(job["log"], 5)
    return "failed" if ("error:" in tail or "Traceback" in tail) else "done"


_PROGRESS = re.compile(r"(\d+)/(\d+) \[")


def progress(log: str | Path) -> dict:
    """{"done", "total"} from the last tqdm bar line in a job's log (0/0 before the first)."""
    text = _read_end(Path(log))
    found = _PROGRESS.findall(text)
    done, total = (int(found[-1][0]), int(found[-1][1])) if found else (0, 0)
    return {"done": done, "total": total}


def may_stop(job: dict, user: str | None, role: str | None) -> bool:
    return role == "admin" or (user is not None and job.get("user") == user)


def stop(data_dir: Path, grace_s: float = STOP_GRACE_S, *, kind: str = "train", user: str | None = None,
         role: str | None = "admin") -> str:
    """SIGTERM the job's whole process group (a trainer saves a checkpoint and exits), then
    SIGKILL whatever is left after `grace_s`. Only the launcher or an admin may stop a job.
    Returns a one-line outcome."""
    job = active(data_dir, kind)
    if not job or not job["alive"]:
        return f"no {'run' if kind == 'train' else kind + ' job'} is going"
    if not may_stop(job, user, role):
        raise UserError(f"only {job.get('user')} (who launched it) or an admin may stop it")
    name = Path(job["run_dir"]).name if kind == "train" else job["label"]
    if kind != "train":
        _record(data_dir, kind, stopped_by=user)
    pgid = job["pgid"]
    _signal_group(pgid, signal.SIGTERM)
    deadline = time.time() + grace_s
    while time.time() < deadline:
        _reap(job["pid"])
        if not group_pids(pgid):
            _reap(job["pid"], wait_s=5.0)
            return f"stopped {name}" + (" (checkpoint saved)" if kind == "train" else "")
        time.sleep(0.2)
    _signal_group(pgid, signal.SIGKILL)
    for _ in range(50):
        _reap(job["pid"])
        if not group_pids(pgid):
            _reap(job["pid"], wait_s=5.0)
            break
        time.sleep(0.1)
    return f"killed {name} (it did not stop within {grace_s:.0f}s)"


def _record(data_dir: Path, kind: str, **fields) -> None:
    f = jobs_dir(data_dir, kind) / "active.json"
    job = json.loads(f.read_text())
    job.update(fields)
    _write_private(f, json.dumps(job))


def _signal_group(pgid: int, sig) -> None:
    try:
        os.killpg(pgid, sig)
    except ProcessLookupError:
        pass


def _slug(name: str) -> str:
    return "".join(c if c.isalnum() or c in "-_" else "-" for c in name)[:40] or "set"


def _read_end(f: Path, size: int = 64 * 1024) -> str:
    try:
        with open(f, "rb") as fh:
            fh.seek(0, 2)
            end = fh.tell()
            fh.seek(max(0, end - size))
            return fh.read().decode("utf-8", "replace")
    except OSError:
        return ""


def log_tail(path: str | Path, n: int = 40) -> str:
    """The last n lines of a job's output: a run directory's console.log (the trainer's lines and
    any traceback) or a job log file. Progress-bar redraws are dropped."""
    p = Path(path)
    text = _read_end(p / "console.log" if p.is_dir() else p)
    lines = [ln.rsplit("\r", 1)[-1] for ln in text.splitlines()]
    lines = [ln for ln in lines if ln and "it/s]" not in ln and "s/it]" not in ln]
    return "\n".join(lines[-n:])

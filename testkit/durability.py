"""Durability and verdict latency of the web app under load: N curators judge puzzles through the HTTP
API (`POST /curate/api/verdict`) of a real `mvp serve`, while the other CLI commands that open the
database run beside it (`mvp users add`, `mvp sets freeze`, `mvp export`, a `sqlite3`/`psql` read,
`mvp db backup`) and someone requests the database's files over HTTP; mid-run the server is killed
(SIGKILL, no clean shutdown) and started again. Afterwards every acknowledged verdict (an HTTP 200) is
looked up in the database, and duplicates are counted: a (curator, puzzle) with two "set" events, or a
puzzle with more reviews than the overlap k.

Each curator works as the curate page does: its own answer first (`/curate/api/answer`), then the
verdict. Also reported: latency of answer + verdict through HTTP (client clock, p50/p95) and whether the server ever wrote
into a deleted WAL (its /proc/PID/fd showing `mvp.sqlite-wal (deleted)`).

The harness; the bench is bench/web_durability.py.
Usage: python bench/web_durability.py [--engine sqlite|postgresql|both] [--curators 20] [--seconds 40]
       [--data DIR]   (DIR: a synthesized data directory; default: synthesize the sample videos)
The security suite runs the same `run` with fewer curators (tests/test_security_durability.py)."""
from __future__ import annotations

import json
import os
import re
import signal
import statistics
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

from testkit.cli import ROOT
from testkit.measure import percentile


@dataclass
class Tally:
    acked: list = field(default_factory=list)        # (user, puzzle id, verdict) answered 200
    latency_s: list = field(default_factory=list)
    failures: int = 0                                # requests that got no answer (server down)
    errors: list = field(default_factory=list)       # what made a curator give up (a 4xx, a 401)
    phase: int = 0                                   # 0 before the kill, 1 after the restart
    after_restart: set = field(default_factory=set)  # curators with a verdict acknowledged after it
    lock: threading.Lock = field(default_factory=threading.Lock)


class Transient(Exception):
    """No answer or a 5xx: the server is down or restarting."""


def _post(c, path: str, body: dict):
    import httpx
    try:
        r = c.post(path, json=body)
    except httpx.TransportError as e:
        raise Transient(str(e)) from None
    if r.status_code >= 500:
        raise Transient(f"{r.status_code}")
    if r.status_code != 200:
        raise RuntimeError(f"{path}: {r.status_code} {r.text[:200]}")
    return r.json()


def curator(url: str, name: str, password: str, stop: threading.Event, tally: Tally, think_s: float = 0.0) -> None:
    """Judge puzzles until `stop`: accept/reject alternately; after a request got no answer (the
    server is being restarted) retry with the same session cookie, reloading the state."""
    from testkit.web import http_login
    try:
        c = http_login(url, name, password)
    except Exception as e:   # noqa: BLE001  reported, not swallowed by the thread
        tally.errors.append(f"{name}: login: {e}")
        return
    c.timeout = 120
    state, html, i = None, "", 0
    while not stop.is_set():
        try:
            if state is None or not state.get("pid"):
                out = _post(c, "/curate/api/load", {})
                state, html = out["state"], out["html"]
                if not state.get("pid"):
                    return                                   # nothing left for this curator
            pid = state["pid"]
            t = time.perf_counter()
            # solve first (the page asks for the curator's own answer before a decisive verdict)
            m = int(re.search(r'data-m="(\d+)"', html).group(1))
            labels = list(dict.fromkeys(re.findall(r'data-label="([A-Z])"', html)))[:m]
            try:
                _post(c, "/curate/api/answer", {"state": state, "labels": labels, "seconds": 1.0})
            except RuntimeError as e:   # answered before the restart; its verdict got no answer
                if "already answered" not in str(e):
                    raise
            verdict = "accept" if i % 2 == 0 else "reject"
            out = _post(c, "/curate/api/verdict", {"state": state, "verdict": verdict})
            dt = time.perf_counter() - t
            if not out.get("msg", "").startswith(f"{verdict}: {pid}"):
                raise RuntimeError(f"verdict on {pid} not recorded: {out.get('msg')!r}")
            with tally.lock:
                tally.acked.append((name, pid, verdict))
                tally.latency_s.append(dt)
                if tally.phase:
                    tally.after_restart.add(name)
            state, html, i = out["state"], out["html"], i + 1
            if think_s:
                time.sleep(think_s)
        except Transient:
            with tally.lock:
                tally.failures += 1
            state = None
            time.sleep(0.3)
        except Exception as e:   # noqa: BLE001
            tally.errors.append(f"{name}: {e}")
            return


def wal_deleted(pid: int) -> bool:
    """Does the server process hold a WAL file that was deleted under it?"""
    fd_dir = Path(f"/proc/{pid}/fd")
    for fd in fd_dir.iterdir():
        try:
            target = os.readlink(fd)
        except OSError:
            continue
        if "-wal" in target and target.endswith("(deleted)"):
            return True
    return False


def cli_round(data: Path, db_url: str, tag: str, admin_client, only: tuple[str, ...] | None = None) -> list[str]:
    """The commands that open the database while the server writes (`only`: a subset of
    users/freeze/export/read/backup); returns what failed."""
    py = [sys.executable, "-m", "app.cli"]
    db = ["--db", db_url, "--data", str(data)]
    for path in ("/data/mvp.sqlite", "/data/mvp.sqlite-wal", "/data/mvp.sqlite-shm"):
        admin_client.get(path)                       # what used to make the server open the file
    cmds = [py + ["users", "add", f"late-{tag}", "--password", "late-user-password", *db],
            py + ["sets", "freeze", f"set-{tag}", *db],
            py + ["export", "--set", f"set-{tag}", "--format", "jsonl", "--out", str(data.parent / f"export-{tag}"), *db],
            py + ["db", "backup", str(data.parent / f"backup-{tag}.{'sqlite' if db_url.startswith('sqlite') else 'dump'}"), *db]]
    if db_url.startswith("sqlite"):
        cmds.insert(3, ["sqlite3", db_url.removeprefix("sqlite:///"), "SELECT count(*) FROM puzzle_verdicts;"])
    else:
        from sqlalchemy.engine import make_url
        plain = make_url(db_url).set(drivername="postgresql").render_as_string(hide_password=False)
        cmds.insert(3, ["psql", plain, "-c", "SELECT count(*) FROM puzzle_verdicts"])
    names = ["users", "freeze", "export", "read", "backup"]
    failed = []
    for name, cmd in zip(names, cmds):
        if only is not None and name not in only:
            continue
        res = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=300)
        if res.returncode != 0:
            failed.append(f"{' '.join(cmd[2:4])}: {res.stderr.strip()[-200:]}")
    return failed


def verify(db_url: str, tally: Tally) -> dict:
    """Every acknowledged verdict on disk; duplicates counted."""
    from sqlalchemy import create_engine, func, select

    from sqlalchemy.orm import Session

    from db.models.curation import PuzzleVerdict, User, VerdictEvent
    from db.review import overlap_k
    eng = create_engine(db_url)
    with Session(eng) as s:
        k = overlap_k(s)
        current = {(n, p): v for n, p, v in s.execute(
            select(User.name, PuzzleVerdict.puzzle_id, PuzzleVerdict.verdict).join(User, User.id == PuzzleVerdict.user_id))}
        twice = s.scalar(select(func.count()).select_from(
            select(VerdictEvent.user_id, VerdictEvent.puzzle_id).where(VerdictEvent.action == "set",
                                                                       VerdictEvent.label.is_(None))
            .group_by(VerdictEvent.user_id, VerdictEvent.puzzle_id).having(func.count() > 1).subquery()))
        over_k = s.scalar(select(func.count()).select_from(
            select(PuzzleVerdict.puzzle_id).where(PuzzleVerdict.verdict != "skip")
            .group_by(PuzzleVerdict.puzzle_id).having(func.count() > k).subquery()))
    eng.dispose()
    lost = [a for a in tally.acked if current.get((a[0], a[1])) != a[2]]
    return {"acknowledged": len(tally.acked), "lost": len(lost), "lost_examples": lost[:3],
            "duplicated_events": twice, "puzzles_over_k": over_k, "k": k}


def run(data: Path, db_url: str, users: dict[str, str], admin: tuple[str, str], seconds: float = 20.0,
        log: Path | None = None, think_s: float = 0.0, after_restart: tuple[str, ...] | None = None) -> dict:
    """The whole scenario on an existing data directory and database; returns the summary. Before the
    kill every CLI command runs; after the restart those in `after_restart` (default: all)."""
    from testkit.web import http_login
    from testkit.web import Server, free_port
    srv = Server(data, db_url, free_port(), log or data.parent / "durability-serve.log").start()
    stop, tally = threading.Event(), Tally()
    admin_client = http_login(srv.url, *admin)
    threads = [threading.Thread(target=curator, args=(srv.url, n, pw, stop, tally, think_s), daemon=True)
               for n, pw in users.items()]
    failed, deleted, t0 = [], False, time.perf_counter()
    try:
        for t in threads:
            t.start()
        time.sleep(seconds * 0.2)
        failed += cli_round(data, db_url, "a", admin_client)
        deleted |= wal_deleted(srv.proc.pid)
        time.sleep(seconds * 0.2)
        acked_before = len(tally.acked)
        os.kill(srv.proc.pid, signal.SIGKILL)            # a crash, not a clean shutdown
        srv.proc.wait()
        tally.phase = 1
        srv.start()
        time.sleep(seconds * 0.3)
        failed += cli_round(data, db_url, "b", admin_client, after_restart)
        deleted |= wal_deleted(srv.proc.pid)
        time.sleep(seconds * 0.3)
    finally:
        stop.set()
        for t in threads:
            t.join(timeout=60)
        srv.stop()
    out = verify(db_url, tally)
    lat = tally.latency_s
    out.update({"curators": len(users), "seconds": round(time.perf_counter() - t0, 1),
                "acked_before_kill": acked_before, "requests_failed_during_restart": tally.failures,
                "cli_failures": failed, "wal_deleted_under_server": deleted, "curator_errors": tally.errors,
                "curators_judging_after_restart": len(tally.after_restart),
                "verdict_p50_ms": round(1000 * statistics.median(lat), 1) if lat else None,
                "verdict_p95_ms": round(1000 * percentile(lat, 0.95), 1) if lat else None,
                "verdicts_per_s": round(len(lat) / max(1e-9, seconds), 1)})
    return out


def prepare(src: Path, dst: Path, engine: str, n_puzzles: int, n_curators: int) -> tuple[str, dict, tuple]:
    """A data directory `dst` (frames linked from `src`) and a database of `engine` holding the puzzles of
    `src` cloned to `n_puzzles`, overlap k = 1, the curators and an admin."""
    from sqlalchemy import text

    from db.engine import open_db
    from db.sets.importer import store_records
    from db.review import set_overlap
    from db.users.accounts import add_user
    from testkit.store import clone_puzzles
    dst.mkdir(parents=True)
    (dst / "frames").symlink_to((src / "frames").resolve(), target_is_directory=True)
    records = [json.loads(line) for line in (src / "puzzles.jsonl").read_text().splitlines() if line.strip()]
    from testkit.store import new_database_url
    url = new_database_url(engine, dst)
    Session = open_db(url, dst)
    with Session() as s:
        store_records(s, records)
        s.commit()
    clone_puzzles(Session, n_puzzles)
    users = {f"bench{i:02d}": f"bench{i:02d}-password" for i in range(n_curators)}
    with Session() as s:
        set_overlap(s, 1)
        for n, pw in users.items():
            add_user(s, n, "curator", pw)
        add_user(s, "benchadmin", "admin", "benchadmin-password")
        s.commit()
        s.execute(text("SELECT 1"))
    Session.kw["bind"].dispose()
    return url, users, ("benchadmin", "benchadmin-password")

"""Run `process_video` over many files, with a time limit per file that follows its probed duration
and a watchdog that kills a worker making no progress.

Hand-written rather than ProcessPoolExecutor/multiprocessing.Pool because neither can kill one hung
task, and kept rather than pebble's ProcessPool: pebble kills a task at a timeout fixed when the task
is scheduled, but here the deadline is only known once the worker has probed the file (its duration
sets the limit) and moves with the worker's progress reports, which travel on the same pipe as the
result. decord can hang forever on some files and leaks memory, so each worker is a process we own,
killed at its deadline or after `stall_s` without progress and replaced, and recycled after
`max_tasks` videos."""
from __future__ import annotations

import multiprocessing as mp
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from multiprocessing.connection import wait

from mvp_core.synth.config import DEFAULT_STALL_S, SynthConfig
from mvp_core.synth.job import VideoResult, process_video

UNKNOWN_DURATION_LIMIT_S = 600.0  # limit for a file whose container does not say how long it is
PROGRESS_MIN_INTERVAL_S = 0.5     # the worker sends at most this often (and always on a phase change)


def _worker_main(conn, cfg: SynthConfig, data_dir: str) -> None:
    while True:
        try:
            path = conn.recv()
        except EOFError:
            return
        if path is None:
            return
        last = [0.0, ""]

        def progress(info: dict, last: list = last) -> None:
            now = time.monotonic()
            if info.get("phase") != last[1] or now - last[0] >= PROGRESS_MIN_INTERVAL_S:
                last[:] = [now, info.get("phase", "")]
                conn.send(("progress", info))
        conn.send(("result", process_video(path, cfg, data_dir, progress)))


@dataclass
class _Slot:
    proc: mp.Process
    conn: object
    path: str | None = None
    started: float = 0.0
    deadline: float = 0.0       # total limit for the current file
    last_progress: float = 0.0
    limit_s: float = 0.0
    quiet_s: float = 0.0        # the worker announced a step this long without progress (loading a model)
    done: int = 0


@dataclass
class Limits:
    """`timeout_s` None: the limit follows each file's probed duration (job.time_limit_s);
    a number: that fixed limit for every file. `stall_s`: seconds without progress before a kill."""
    timeout_s: float | None = None
    stall_s: float = DEFAULT_STALL_S


def run_local(paths: list[str], cfg: SynthConfig, data_dir: str, workers: int, timeout_s: float | None,
              on_result: Callable[[VideoResult], None], max_tasks: int = 25, stall_s: float = DEFAULT_STALL_S,
              on_progress: Callable[[str, int, dict], None] | None = None) -> None:
    """Process `paths` on `workers` processes; `on_result` runs in this process, in completion order.
    `on_progress(path, worker_pid, info)` sees every progress report (tests use it to freeze a worker)."""
    start = _worker_factory(cfg, data_dir)
    pending = deque(paths)
    limits = Limits(timeout_s, stall_s)
    slots = [start() for _ in range(max(1, min(workers, len(paths))))]
    try:
        while pending or any(s.path for s in slots):
            for s in slots:
                if s.path is None and pending:
                    _assign(s, pending.popleft(), limits)
            ready = _wait_for_news(slots, limits)
            for i, s in enumerate(slots):
                if not s.path:
                    continue
                result, replace = _poll(s, s.conn in ready, limits, on_progress)
                if result is not None:
                    slots[i] = _finished(s, replace, max_tasks, start)
                    on_result(result)
    finally:
        for s in slots:
            _stop(s, kill=bool(s.path))


def _worker_factory(cfg: SynthConfig, data_dir: str) -> Callable[[], _Slot]:
    """A function that starts one worker process and returns its slot."""
    ctx = mp.get_context("forkserver")
    ctx.set_forkserver_preload(["mvp_core.synth.job"])

    def start() -> _Slot:
        parent, child = ctx.Pipe()
        proc = ctx.Process(target=_worker_main, args=(child, cfg, data_dir), daemon=True)
        proc.start()
        child.close()
        return _Slot(proc, parent)
    return start


def _wait_for_news(slots: list[_Slot], limits: Limits) -> list:
    """The busy workers' pipes that have a message, waiting at most until the next deadline or stall check."""
    busy = [s for s in slots if s.path]
    wake = min(min(s.deadline, s.last_progress + max(limits.stall_s, s.quiet_s)) for s in busy)
    return wait([s.conn for s in busy], timeout=max(0.0, wake - time.monotonic()))


def _finished(s: _Slot, replace: bool, max_tasks: int, start: Callable[[], _Slot]) -> _Slot:
    """The slot after its file is done: the same worker, or a new one when it was killed or has
    done `max_tasks` files (decoders leak memory)."""
    s.path, s.done = None, s.done + 1
    if replace or s.done >= max_tasks:
        _stop(s, kill=replace)
        return start()
    return s


def _assign(s: _Slot, path: str, limits: Limits) -> None:
    now = time.monotonic()
    s.path, s.started, s.last_progress, s.quiet_s = path, now, now, 0.0
    s.limit_s = limits.timeout_s if limits.timeout_s is not None else UNKNOWN_DURATION_LIMIT_S
    s.deadline = now + s.limit_s
    s.conn.send(path)


def _poll(s: _Slot, readable: bool, limits: Limits, on_progress) -> tuple[VideoResult | None, bool]:
    """(result, worker must be replaced) once the current file is finished, failed or overdue."""
    now = time.monotonic()
    if readable:
        try:
            kind, payload = s.conn.recv()
        except (EOFError, OSError):
            s.proc.join(1)
            return VideoResult(s.path, False, f"decoder crashed (worker exit code {s.proc.exitcode})"), True
        if kind == "result":
            return payload, False
        s.last_progress, s.quiet_s = now, float(payload.get("quiet_s", 0.0))
        if limits.timeout_s is None and payload.get("limit_s"):
            s.limit_s = float(payload["limit_s"])
            s.deadline = s.started + s.limit_s
        if s.quiet_s:  # an announced quiet step (loading a model) is allowed on top of the file's limit
            s.limit_s += s.quiet_s
            s.deadline += s.quiet_s
        if on_progress:
            on_progress(s.path, s.proc.pid, payload)
        return None, False
    if now >= s.deadline:
        why = "the limit its duration implies; " if limits.timeout_s is None else ""
        return VideoResult(s.path, False, f"timed out after {s.limit_s:.0f} s ({why}decode hung or too slow)",
                           seconds=now - s.started), True
    if now - s.last_progress >= max(limits.stall_s, s.quiet_s):
        return VideoResult(s.path, False, f"no decoding progress for {limits.stall_s:g} s (decode hung); "
                                          "worker killed", seconds=now - s.started), True
    return None, False


def _stop(slot: _Slot, kill: bool) -> None:
    if kill:
        slot.proc.kill()
    else:
        try:
            slot.conn.send(None)
        except OSError:
            slot.proc.kill()
    slot.proc.join(5)
    if slot.proc.is_alive():
        slot.proc.kill()
        slot.proc.join()
    slot.conn.close()

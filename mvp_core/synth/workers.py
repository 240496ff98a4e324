"""Run `process_video` over many files with a hard time limit per file.

Hand-written rather than ProcessPoolExecutor/multiprocessing.Pool because neither can kill one hung
task: decord can hang forever on some files and leaks memory, so each worker is a process we own,
killed at its deadline and replaced, and recycled after `max_tasks` videos."""
from __future__ import annotations

import multiprocessing as mp
import time
from collections import deque
from dataclasses import dataclass
from multiprocessing.connection import wait
from typing import Callable

from mvp_core.synth.job import VideoResult, process_video
from mvp_core.synth.config import SynthConfig


def _worker_main(conn, cfg: SynthConfig, data_dir: str) -> None:
    while True:
        try:
            path = conn.recv()
        except EOFError:
            return
        if path is None:
            return
        conn.send(process_video(path, cfg, data_dir))


@dataclass
class _Slot:
    proc: mp.Process
    conn: object
    path: str | None = None
    deadline: float = 0.0
    done: int = 0


def run_local(paths: list[str], cfg: SynthConfig, data_dir: str, workers: int, timeout_s: float,
              on_result: Callable[[VideoResult], None], max_tasks: int = 25) -> None:
    """Process `paths` on `workers` processes; `on_result` runs in this process, in completion order."""
    ctx = mp.get_context("forkserver")
    ctx.set_forkserver_preload(["mvp_core.synth.job"])
    pending = deque(paths)

    def start() -> _Slot:
        parent, child = ctx.Pipe()
        proc = ctx.Process(target=_worker_main, args=(child, cfg, data_dir), daemon=True)
        proc.start()
        child.close()
        return _Slot(proc, parent)

    def stop(slot: _Slot, kill: bool) -> None:
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

    slots = [start() for _ in range(max(1, min(workers, len(paths))))]
    try:
        while pending or any(s.path for s in slots):
            for s in slots:
                if s.path is None and pending:
                    s.path = pending.popleft()
                    s.deadline = time.monotonic() + timeout_s
                    s.conn.send(s.path)
            busy = [s for s in slots if s.path]
            wait_s = max(0.0, min(s.deadline for s in busy) - time.monotonic())
            ready = wait([s.conn for s in busy], timeout=wait_s)
            for i, s in enumerate(slots):
                if not s.path:
                    continue
                replace = False
                if s.conn in ready:
                    try:
                        result = s.conn.recv()
                    except (EOFError, OSError):
                        s.proc.join(1)
                        result = VideoResult(s.path, False, f"decoder crashed (worker exit code {s.proc.exitcode})")
                        replace = True
                elif time.monotonic() >= s.deadline:
                    result = VideoResult(s.path, False, f"timed out after {timeout_s:g} s (decode hung or too slow)",
                                         seconds=timeout_s)
                    replace = True
                else:
                    continue
                s.path, s.done = None, s.done + 1
                if replace or s.done >= max_tasks:
                    stop(s, kill=replace)
                    slots[i] = start()
                on_result(result)
    finally:
        for s in slots:
            stop(s, kill=bool(s.path))

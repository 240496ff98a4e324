"""`--engine ray`: the same per-video function as Ray tasks, for corpora beyond one machine.

The data directory must be on storage every Ray worker can write (frames are written by the tasks);
results come back to the driver, which alone writes the database. At most `workers` tasks are in
flight so each task's deadline is measured from about when it starts; an overdue task is force-cancelled
(its worker process killed). Ray tasks report no progress, so there is no stall watchdog here:
`timeout_s` None gives every file the local engine's limit for an unknown duration."""
from __future__ import annotations

import time
from collections.abc import Callable

from mvp_core.synth.config import SynthConfig
from mvp_core.synth.job import VideoResult, process_video


def run_ray(paths: list[str], cfg: SynthConfig, data_dir: str, workers: int, timeout_s: float | None,
            on_result: Callable[[VideoResult], None], address: str | None = None) -> None:
    import ray

    from mvp_core.synth.workers import UNKNOWN_DURATION_LIMIT_S
    timeout_s = UNKNOWN_DURATION_LIMIT_S if timeout_s is None else timeout_s
    started_here = not ray.is_initialized()
    if started_here:
        if address:
            ray.init(address=address, log_to_driver=False)
        else:
            ray.init(num_cpus=max(1, workers), include_dashboard=False, log_to_driver=False)
    task = ray.remote(max_retries=0, num_cpus=1)(process_video)
    todo = list(reversed(paths))
    in_flight: dict = {}
    try:
        while todo or in_flight:
            while todo and len(in_flight) < max(1, workers):
                p = todo.pop()
                in_flight[task.remote(p, cfg, data_dir)] = (p, time.monotonic() + timeout_s)
            soonest = min(d for _, d in in_flight.values())
            ready, _ = ray.wait(list(in_flight), num_returns=1, timeout=max(0.0, soonest - time.monotonic()))
            for ref in ready:
                p, _ = in_flight.pop(ref)
                try:
                    on_result(ray.get(ref))
                except ray.exceptions.RayError as e:
                    on_result(VideoResult(p, False, f"ray task failed ({type(e).__name__})"))
            now = time.monotonic()
            for ref, (p, deadline) in list(in_flight.items()):
                if now >= deadline:
                    ray.cancel(ref, force=True)
                    in_flight.pop(ref)
                    on_result(VideoResult(p, False, f"timed out after {timeout_s:g} s (decode hung or too slow)",
                                          seconds=timeout_s))
    finally:
        if started_here:
            ray.shutdown()

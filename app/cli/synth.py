"""`mvp synth VIDEO_DIR...`: videos -> MVP puzzles in the database and DATA/puzzles.jsonl."""
from __future__ import annotations

import sys
import time

from app.cli.args import add_db_args
from mvp_core.errors import UserError


def register(sub) -> None:
    p = sub.add_parser("synth", help="turn folders of videos into MVP puzzles")
    p.add_argument("inputs", nargs="*", metavar="VIDEO_DIR", help="folders (searched recursively) or files")
    add_db_args(p)
    p.add_argument("--per-video", type=int, default=3, help="puzzles per video, from different start times")
    p.add_argument("--n", type=int, default=8, help="keyframes per puzzle (N)")
    p.add_argument("--m", type=int, default=3, help="masked frames (m)")
    p.add_argument("--l", type=int, default=4, help="distractors per puzzle (l)")
    p.add_argument("--fps", type=float, default=1.0, help="sampling rate in frames/s")
    p.add_argument("--kappa", type=float, default=None, help="near-duplicate similarity threshold (default: the embedder's)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--tail", action="store_true", help="allow masking the tail (future prediction)")
    p.add_argument("--adapt", action="store_true",
                   help="a video with no puzzle at N and l tries smaller shapes (guard unchanged; SynthConfig.adapt)")
    p.add_argument("--hardness", choices=["hard", "random"], default="hard", help="distractor choice")
    p.add_argument("--embedder", default="pixel", help="'pixel' or 'clip:/local/clip/dir'")
    p.add_argument("--max-side", type=int, default=640, help="stored frames' longest side in pixels")
    p.add_argument("--workers", type=int, default=1, help="worker processes (or Ray tasks in flight) at once")
    p.add_argument("--engine", default="local", help="local (processes on this machine) or ray")
    p.add_argument("--ray-address", default=None, help="connect to a Ray cluster instead of starting one")
    p.add_argument("--max-overlap", type=float, default=0.0,
                   help="share of a puzzle's targets that may repeat a target or shown frame of another puzzle "
                        "of the same video (0: none, where the video allows; 1: no control)")
    p.add_argument("--cross-video", type=int, default=0,
                   help="K extra distractors per puzzle from other videos of the run, matched by embedding")
    p.add_argument("--timeout", type=float, default=None,
                   help="fixed time limit per video in seconds (default: follows each video's probed duration)")
    p.add_argument("--stall-timeout", type=float, default=30.0,
                   help="kill a worker that reports no decoding progress for this many seconds")
    p.add_argument("--retry-failed", action="store_true", help="retry files skipped by an earlier run")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    p.add_argument("--print-config", action="store_true",
                   help="print the resolved settings with their documentation and exit")
    p.set_defaults(func=run)


class _Tally:
    """Stores each video's outcome and keeps the numbers for the summary."""

    def __init__(self, Session_, params_key: str):
        self.Session_, self.params_key = Session_, params_key
        self.stats = {"done": 0, "skipped": 0, "already": 0, "puzzles": 0, "frames": 0, "rss": 0.0, "flat": 0}
        self.skipped: list[str] = []
        self.keys: dict[str, tuple] = {}

    def skip(self, key: tuple | None, path, reason: str) -> None:
        """Count and report a refused file; stored (so a rerun knows it) unless it has no key."""
        from db.puzzles.synth_store import save_skip
        from mvp_core.video.scan import printable_path
        if key is not None:
            save_skip(self.Session_, key, self.params_key, reason)
        self.stats["skipped"] += 1
        self.skipped.append(f"  SKIP {printable_path(path)}: {reason}")

    def store(self, res) -> None:
        from db.puzzles.synth_store import save_result
        from mvp_core.video.scan import printable_path
        added = save_result(self.Session_, self.keys[res.path], self.params_key, res)
        st = self.stats
        st["rss"] = max(st["rss"], res.peak_rss_mb)
        if res.ok:
            st["done"] += 1
            st["puzzles"] += added
            st["frames"] += res.n_frames_written
            st["flat"] += res.n_flat
        else:
            st["skipped"] += 1
            self.skipped.append(f"  SKIP {printable_path(res.path)}: {res.reason}")


def _config(args, check_embedder: bool = True):
    """The settings that change the puzzles, validated: a bad one is one line, before anything is written."""
    from mvp_core.synth.config import SynthConfig
    from mvp_core.synth.embed import EmbedderSpec
    cfg = SynthConfig.from_values({
        "fps": args.fps, "n": args.n, "m": args.m, "l": args.l, "kappa": args.kappa, "per_video": args.per_video,
        "seed": args.seed, "tail": args.tail, "adapt": args.adapt, "hardness": args.hardness,
        "embedder": str(EmbedderSpec.parse(args.embedder)), "max_side": args.max_side,
        "max_overlap": args.max_overlap, "cross_video": args.cross_video})
    if check_embedder and cfg.embedder.startswith("clip:"):
        EmbedderSpec.parse(cfg.embedder).build()  # fail fast, once, on a bad checkpoint path
    return cfg


def _run_config(args):
    """How the work is run (never changes the puzzles), validated the same way."""
    from mvp_core.synth.config import SynthRunConfig
    return SynthRunConfig.from_values({
        "workers": args.workers, "engine": args.engine, "ray_address": args.ray_address or None,
        "timeout": args.timeout, "stall_timeout": args.stall_timeout, "retry_failed": args.retry_failed})


def _print_config(cfg, settings) -> None:
    from mvp_core.synth.config import SynthConfig, SynthRunConfig
    print("# ---- what the puzzles are (part of every puzzle id)")
    print(SynthConfig.documented_yaml(cfg), end="")
    print("# ---- how the work is run (never changes the puzzles)")
    print(SynthRunConfig.documented_yaml(settings), end="")


def _todo(inputs: list[str], tally: _Tally, retry_failed: bool) -> None:
    """The files to process (into tally.keys); refused and already handled ones are counted."""
    from db.puzzles.synth_store import file_key, previous
    from mvp_core.video.scan import NAME_NOT_UTF8, scan
    for c in scan(inputs):
        if c.skip_reason == NAME_NOT_UTF8:       # no key: the name cannot be stored as text
            tally.skip(None, c.path, c.skip_reason)
            continue
        key = file_key(c.path)
        with tally.Session_() as s:
            prev = previous(s, key, tally.params_key)
        if prev is not None and (prev.status == "done" or not retry_failed):
            tally.stats["already"] += 1
        elif c.skip_reason:
            tally.skip(key, c.path, c.skip_reason)
        else:
            tally.keys[str(c.path)] = key


def run(args) -> int:
    from db.engine import data_dir, open_db
    from db.puzzles.synth_store import write_jsonl

    t0 = time.perf_counter()
    cfg, settings = _config(args, check_embedder=not args.print_config), _run_config(args)
    if args.print_config:
        _print_config(cfg, settings)
        return 0
    if not args.inputs:
        raise UserError("synth: give at least one VIDEO_DIR (a folder of videos or a video file)")
    data = data_dir(args.data)
    data.mkdir(parents=True, exist_ok=True)
    tally = _Tally(open_db(args.db, data), cfg.key())
    _todo(args.inputs, tally, settings.retry_failed)
    bar = _progress_bar(tally, args.quiet)
    held = _process_all(tally, cfg, settings, data, bar)
    _store_held(held, tally, cfg, data)
    bar.close()
    n_records = write_jsonl(tally.Session_, data / "puzzles.jsonl")
    _summary(tally, data, n_records, time.perf_counter() - t0)
    return 0


def _progress_bar(tally: _Tally, quiet: bool):
    from tqdm import tqdm
    return tqdm(total=len(tally.keys), unit="video", desc="synth", disable=quiet or not tally.keys, file=sys.stderr)


def _process_all(tally: _Tally, cfg, settings, data, bar) -> list:
    """Every file to do, on the chosen engine; returns the results held back for --cross-video
    (they wait for every video's donor frames, kept in memory); the others are stored as they come."""
    held: list = []
    todo = tally.keys
    if not todo:
        return held

    def keep(res) -> None:
        if cfg.cross_video and res.ok:
            held.append(res)
        else:
            tally.store(res)
        bar.update(1)
        bar.set_postfix(puzzles=tally.stats["puzzles"], skipped=tally.stats["skipped"])

    on_result = _SameSizeInPathOrder(todo, keep)
    # largest files first: the long videos start early and the small ones fill in (fewer idle workers at the end)
    order = sorted(todo, key=lambda p: -todo[p][1])
    if settings.engine == "ray":
        from mvp_core.synth.ray_engine import run_ray
        run_ray(order, cfg, str(data), settings.workers, settings.timeout, on_result, settings.ray_address)
    else:
        from mvp_core.synth.workers import run_local
        run_local(order, cfg, str(data), settings.workers, settings.timeout, on_result,
                  stall_s=settings.stall_timeout)
    return held


class _SameSizeInPathOrder:
    """Passes results on as they come, except that files of equal size (the only ones that can be
    copies of one video) go in path order whatever order the workers finish them in: the copy stored
    first names the video in every record, so with 2 workers two copies of one video gave a different
    puzzles.jsonl than with 1. Only a file waiting for a same-size file's result is held back."""

    def __init__(self, todo: dict[str, tuple], on_result):
        self.on_result, self.waiting = on_result, {}
        by_size: dict[int, list[str]] = {}
        for path in sorted(todo):
            by_size.setdefault(todo[path][1], []).append(path)
        self.queue_of = {p: group for group in by_size.values() if len(group) > 1 for p in group}

    def __call__(self, res) -> None:
        queue = self.queue_of.get(res.path)
        if queue is None:
            self.on_result(res)
            return
        self.waiting[res.path] = res
        while queue and queue[0] in self.waiting:
            self.on_result(self.waiting.pop(queue.pop(0)))


def _store_held(held: list, tally: _Tally, cfg, data) -> None:
    if not held:
        return
    from mvp_core.synth.cross_video import add_cross_video
    add_cross_video(held, cfg, str(data))
    for res in sorted(held, key=lambda r: r.path):
        tally.store(res)


def _summary(tally: _Tally, data, n_records: int, secs: float) -> None:
    stats = tally.stats
    print(f"synth: {stats['done']} videos done, {stats['skipped']} skipped, {stats['already']} already handled; "
          f"{stats['puzzles']} new puzzles, {stats['frames']} frames, {stats['flat']} flat frames dropped; {secs:.1f} s"
          + (f"; peak worker memory {stats['rss']:.0f} MB" if stats["rss"] else ""))
    for line in tally.skipped:
        print(line)
    print(f"puzzles.jsonl: {data / 'puzzles.jsonl'} ({n_records} puzzles in the store)")

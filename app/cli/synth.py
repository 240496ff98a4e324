"""`mvp synth VIDEO_DIR...`: videos -> MVP puzzles in the database and DATA/puzzles.jsonl."""
from __future__ import annotations

import sys
import time

from app.cli.args import add_db_args


def register(sub) -> None:
    p = sub.add_parser("synth", help="turn folders of videos into MVP puzzles")
    p.add_argument("inputs", nargs="+", metavar="VIDEO_DIR", help="folders (searched recursively) or files")
    add_db_args(p)
    p.add_argument("--per-video", type=int, default=3, help="puzzles per video, from different start times")
    p.add_argument("--n", type=int, default=8, help="keyframes per puzzle (N)")
    p.add_argument("--m", type=int, default=3, help="masked frames (m)")
    p.add_argument("--l", type=int, default=4, help="distractors per puzzle (l)")
    p.add_argument("--fps", type=float, default=1.0, help="sampling rate in frames/s")
    p.add_argument("--kappa", type=float, default=None, help="near-duplicate similarity threshold (default: the embedder's)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--tail", action="store_true", help="allow masking the tail (future prediction)")
    p.add_argument("--hardness", choices=["hard", "random"], default="hard", help="distractor choice")
    p.add_argument("--embedder", default="pixel", help="'pixel' or 'clip:/local/clip/dir'")
    p.add_argument("--max-side", type=int, default=640, help="stored frames' longest side in pixels")
    p.add_argument("--workers", type=int, default=1)
    p.add_argument("--engine", choices=["local", "ray"], default="local")
    p.add_argument("--ray-address", default=None, help="connect to a Ray cluster instead of starting one")
    p.add_argument("--max-overlap", type=float, default=0.0,
                   help="share of a puzzle's targets that may repeat a target or shown frame of another puzzle "
                        "of the same video (0: none, where the video allows; 1: no control)")
    p.add_argument("--cross-video", type=int, default=0,
                   help="K extra distractors per puzzle from other videos of the run, matched by embedding")
    p.add_argument("--timeout", type=float, default=None,
                   help="fixed time limit per video in seconds (default: follows each video's probed duration)")
    p.add_argument("--stall-timeout", type=float, default=20.0,
                   help="kill a worker that reports no decoding progress for this many seconds")
    p.add_argument("--retry-failed", action="store_true", help="retry files skipped by an earlier run")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    p.set_defaults(func=run)


def run(args) -> int:
    from tqdm import tqdm

    from db.engine import data_dir, open_db
    from db.synth_store import file_key, previous, save_result, save_skip, write_jsonl
    from mvp_core.synth.embed import EmbedderSpec
    from mvp_core.synth.config import SynthConfig
    from mvp_core.video.scan import scan

    t0 = time.perf_counter()
    cfg = SynthConfig.from_values({   # validated: a bad setting is one line, before anything is written
        "fps": args.fps, "n": args.n, "m": args.m, "l": args.l, "kappa": args.kappa, "per_video": args.per_video,
        "seed": args.seed, "tail": args.tail, "hardness": args.hardness,
        "embedder": str(EmbedderSpec.parse(args.embedder)), "max_side": args.max_side,
        "max_overlap": args.max_overlap, "cross_video": args.cross_video})
    if cfg.embedder.startswith("clip:"):
        EmbedderSpec.parse(cfg.embedder).build()  # fail fast, once, on a bad checkpoint path
    data = data_dir(args.data)
    data.mkdir(parents=True, exist_ok=True)
    Session_ = open_db(args.db, data)
    params_key = cfg.key()

    stats = {"done": 0, "skipped": 0, "already": 0, "puzzles": 0, "frames": 0, "rss": 0.0, "flat": 0}
    skipped_lines: list[str] = []
    todo: dict[str, tuple] = {}
    for c in scan(args.inputs):
        key = file_key(c.path)
        with Session_() as s:
            prev = previous(s, key, params_key)
        if prev is not None and (prev.status == "done" or not args.retry_failed):
            stats["already"] += 1
            continue
        if c.skip_reason:
            save_skip(Session_, key, params_key, c.skip_reason)
            stats["skipped"] += 1
            skipped_lines.append(f"  SKIP {c.path}: {c.skip_reason}")
            continue
        todo[str(c.path)] = key

    bar = tqdm(total=len(todo), unit="video", desc="synth", disable=args.quiet or not todo, file=sys.stderr)

    held: list = []  # --cross-video: results wait for every video's donor frames (kept in memory)

    def on_result(res) -> None:
        if cfg.cross_video and res.ok:
            held.append(res)
        else:
            _store(res)
        bar.update(1)
        bar.set_postfix(puzzles=stats["puzzles"], skipped=stats["skipped"])

    def _store(res) -> None:
        added = save_result(Session_, todo[res.path], params_key, res)
        stats["rss"] = max(stats["rss"], res.peak_rss_mb)
        if res.ok:
            stats["done"] += 1
            stats["puzzles"] += added
            stats["frames"] += res.n_frames_written
            stats["flat"] += res.n_flat
        else:
            stats["skipped"] += 1
            skipped_lines.append(f"  SKIP {res.path}: {res.reason}")

    # largest files first: the long videos start early and the small ones fill in (fewer idle workers at the end)
    order = sorted(todo, key=lambda p: -todo[p][1])
    if todo:
        if args.engine == "ray":
            from mvp_core.synth.ray_engine import run_ray
            run_ray(order, cfg, str(data), args.workers, args.timeout, on_result, args.ray_address)
        else:
            from mvp_core.synth.workers import run_local
            run_local(order, cfg, str(data), args.workers, args.timeout, on_result, stall_s=args.stall_timeout)
    if held:
        from mvp_core.synth.cross_video import add_cross_video
        add_cross_video(held, cfg, str(data))
        for res in sorted(held, key=lambda r: r.path):
            _store(res)
    bar.close()
    n_records = write_jsonl(Session_, data / "puzzles.jsonl")
    secs = time.perf_counter() - t0
    print(f"synth: {stats['done']} videos done, {stats['skipped']} skipped, {stats['already']} already handled; "
          f"{stats['puzzles']} new puzzles, {stats['frames']} frames, {stats['flat']} flat frames dropped; {secs:.1f} s"
          + (f"; peak worker memory {stats['rss']:.0f} MB" if stats["rss"] else ""))
    for line in skipped_lines:
        print(line)
    print(f"puzzles.jsonl: {data / 'puzzles.jsonl'} ({n_records} puzzles in the store)")
    return 0

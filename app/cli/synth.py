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
    p.add_argument("--timeout", type=float, default=600.0, help="hard time limit per video, seconds")
    p.add_argument("--retry-failed", action="store_true", help="retry files skipped by an earlier run")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    p.set_defaults(func=run)


def settings(args):
    """(SynthConfig, SynthRunSettings) from the command line; a bad value is a one-line UserError."""
    from mvp_core.synth.config import SynthConfig, SynthRunSettings
    from mvp_core.synth.embed import EmbedderSpec
    cfg = SynthConfig.from_values({
        "fps": args.fps, "n": args.n, "m": args.m, "l": args.l, "kappa": args.kappa, "per_video": args.per_video,
        "seed": args.seed, "tail": args.tail, "hardness": args.hardness,
        "embedder": str(EmbedderSpec.parse(args.embedder)), "max_side": args.max_side})
    how = SynthRunSettings.from_values({"workers": args.workers, "engine": args.engine,
                                        "ray_address": args.ray_address, "timeout": args.timeout})
    if cfg.embedder.startswith("clip:"):
        EmbedderSpec.parse(cfg.embedder).build()  # fail fast, once, on a bad checkpoint path
    return cfg, how


class _Tally:
    """What the run did, for the progress bar and the closing summary."""

    def __init__(self):
        self.done = self.skipped = self.already = self.puzzles = self.frames = 0
        self.rss = 0.0
        self.skip_lines: list[str] = []

    def skip(self, path, reason: str) -> None:
        self.skipped += 1
        self.skip_lines.append(f"  SKIP {path}: {reason}")


def _todo(args, Session_, params_key: str, tally: _Tally) -> dict[str, tuple]:
    """{path: file key} of the files still to synthesize; bad files are recorded as skipped here."""
    from db.synth_store import file_key, previous, save_skip
    from mvp_core.video.scan import scan
    todo: dict[str, tuple] = {}
    for c in scan(args.inputs):
        key = file_key(c.path)
        with Session_() as s:
            prev = previous(s, key, params_key)
        if prev is not None and (prev.status == "done" or not args.retry_failed):
            tally.already += 1
        elif c.skip_reason:
            save_skip(Session_, key, params_key, c.skip_reason)
            tally.skip(c.path, c.skip_reason)
        else:
            todo[str(c.path)] = key
    return todo


def _synthesize(todo: dict, cfg, how, data, Session_, tally: _Tally, quiet: bool) -> None:
    from tqdm import tqdm

    from db.synth_store import save_result
    params_key = cfg.key()
    bar = tqdm(total=len(todo), unit="video", desc="synth", disable=quiet or not todo, file=sys.stderr)

    def on_result(res) -> None:
        added = save_result(Session_, todo[res.path], params_key, res)
        tally.rss = max(tally.rss, res.peak_rss_mb)
        if res.ok:
            tally.done += 1
            tally.puzzles += added
            tally.frames += res.n_frames_written
        else:
            tally.skip(res.path, res.reason)
        bar.update(1)
        bar.set_postfix(puzzles=tally.puzzles, skipped=tally.skipped)

    # largest files first: the long videos start early and the small ones fill in (fewer idle workers at the end)
    order = sorted(todo, key=lambda p: -todo[p][1])
    if todo:
        if how.engine == "ray":
            from mvp_core.synth.ray_engine import run_ray
            run_ray(order, cfg, str(data), how.workers, how.timeout, on_result, how.ray_address)
        else:
            from mvp_core.synth.workers import run_local
            run_local(order, cfg, str(data), how.workers, how.timeout, on_result)
    bar.close()


def run(args) -> int:
    from db.engine import data_dir, open_db
    from db.synth_store import write_jsonl

    t0 = time.perf_counter()
    cfg, how = settings(args)
    data = data_dir(args.data)
    data.mkdir(parents=True, exist_ok=True)
    Session_ = open_db(args.db, data)
    tally = _Tally()
    todo = _todo(args, Session_, cfg.key(), tally)
    _synthesize(todo, cfg, how, data, Session_, tally, args.quiet)
    n_records = write_jsonl(Session_, data / "puzzles.jsonl")
    secs = time.perf_counter() - t0
    print(f"synth: {tally.done} videos done, {tally.skipped} skipped, {tally.already} already handled; "
          f"{tally.puzzles} new puzzles, {tally.frames} frames; {secs:.1f} s"
          + (f"; peak worker memory {tally.rss:.0f} MB" if tally.rss else ""))
    for line in tally.skip_lines:
        print(line)
    print(f"puzzles.jsonl: {data / 'puzzles.jsonl'} ({n_records} puzzles in the store)")
    return 0

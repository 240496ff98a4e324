"""`mvp make-videos OUT --n N --seed S`: procedural videos with a clear arrow of time
(mvp_core.video.synthetic) for the learning proof and the demo."""
from __future__ import annotations

from mvp_core.errors import UserError


def register(sub) -> None:
    from mvp_core.video.synthetic import KINDS, VideoSpec
    d = VideoSpec()
    p = sub.add_parser("make-videos", help="generate short videos whose frame order is decidable from pixels")
    p.add_argument("out_dir", help="folder to write <kind>_<seed>_<i>.mp4 into")
    p.add_argument("--n", type=int, default=60, help="number of videos (default 60)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--kinds", default=",".join(KINDS), help=f"comma-separated subset of {', '.join(KINDS)}")
    p.add_argument("--size", type=int, default=d.size, help=f"width = height in pixels, even (default {d.size})")
    p.add_argument("--seconds", type=float, default=d.seconds, help=f"duration (default {d.seconds:g})")
    p.add_argument("--fps", type=float, default=d.fps, help=f"frame rate (default {d.fps:g})")
    p.add_argument("--workers", type=int, default=1, help="videos written at once (processes; default 1)")
    p.set_defaults(func=run)


def run(args) -> int:
    from mvp_core.video.synthetic import VideoSpec, make_videos
    if args.seed < 0:
        raise UserError("--seed must be >= 0")
    kinds = tuple(k.strip() for k in args.kinds.split(",") if k.strip())
    try:       # the bounds are VideoSpec's and make_videos' (one place); their message, one line
        spec = VideoSpec(size=args.size, seconds=args.seconds, fps=args.fps,
                         object_size=max(2, args.size // 6))
        paths = make_videos(args.out_dir, args.n, args.seed, spec, kinds, progress=True, workers=args.workers)
    except ValueError as e:
        raise UserError(str(e)) from None
    print(f"{len(paths)} videos in {args.out_dir} ({', '.join(kinds)}; {spec.size}x{spec.size}, "
          f"{spec.seconds:g} s at {spec.fps:g} frame/s)")
    return 0

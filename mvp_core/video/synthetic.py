"""Short procedural videos with a clear arrow of time, for the learning proof and the demo.

Every video shows one white object whose state changes monotonically with time, always in the
same direction (an arrow of time: the order of any two frames is decidable from the two frames
alone), over a background that is redrawn at every frame (a new random colour field: a "scene
cut" per frame). Whole-frame pixel similarity and colour histograms (what the shortcut audit's
solvers use, docs/SYNTHESIS.md) therefore carry almost no information about time. Kinds:

- slide: a square moves left to right at constant speed, at a random height
- grow:  a ring (a ripple) widens linearly; rings of different radii do not overlap
- fill:  a thin bar fills from the left edge, at a random height
- clock: a hand turns clockwise about the centre, from 12 o'clock through 330 degrees (no wrap:
         every angle is one time); its pixel mass stays the same, only its direction changes

Hand-written on purpose: the frames are a few numpy operations; writing goes through moviepy and
the ffmpeg that imageio-ffmpeg ships, the same encoder the project uses elsewhere.
Everything is a function of the seed: the same (seed, index) gives the same pixels."""
from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from mvp_core.atomic import atomic_path

KINDS = ("slide", "grow", "fill", "clock")
MAX_SIZE, MAX_FRAMES, MAX_VIDEO_BYTES = 2048, 36_000, 2 << 30    # VideoSpec's bounds
MAX_VIDEOS = 100_000


@dataclass(frozen=True)
class VideoSpec:
    """How the generated videos look. Defaults: 64x64 px, 12 s at 2 frame/s (24 frames)."""
    size: int = 64            # width = height in pixels (even: H.264 with yuv420p needs it)
    seconds: float = 12.0
    fps: float = 2.0
    object_size: int = 10     # side of the sliding square / thickness of the fill bar, in pixels
    background_cells: int = 4  # the background colour field is this many cells per side, upsampled

    def __post_init__(self):
        """The bounds of a video this generator makes (frames are rendered in memory before encoding)."""
        for name in ("seconds", "fps"):
            v = getattr(self, name)
            if not isinstance(v, (int, float)) or not math.isfinite(v) or v <= 0:
                raise ValueError(f"{name} must be a positive number, not {v!r}")
        if not 16 <= self.size <= MAX_SIZE or self.size % 2:
            raise ValueError(f"size must be an even number of pixels in [16, {MAX_SIZE}], not {self.size}")
        if not 4 <= self.n_frames() <= MAX_FRAMES:
            raise ValueError(f"seconds x fps must give between 4 and {MAX_FRAMES} frames, not {self.n_frames()}")
        if self.size * self.size * 3 * self.n_frames() > MAX_VIDEO_BYTES:
            raise ValueError(f"a {self.size}x{self.size} video of {self.n_frames()} frames needs more than "
                             f"{MAX_VIDEO_BYTES >> 30} GiB in memory; make it smaller or shorter")

    def n_frames(self) -> int:
        return int(round(self.seconds * self.fps))


def _background(rng: np.random.Generator, spec: VideoSpec) -> np.ndarray:
    """A smooth random colour field, darker than the white object (values 0..200)."""
    from PIL import Image
    cells = rng.integers(0, 201, size=(spec.background_cells, spec.background_cells, 3), dtype=np.uint8)
    return np.asarray(Image.fromarray(cells).resize((spec.size, spec.size), Image.BILINEAR)).copy()


def _progress(n: int) -> np.ndarray:
    """Object state per frame in [0, 1], linear in time."""
    return np.linspace(0.0, 1.0, n)


def _slide(frame: np.ndarray, p: float, params: dict, spec: VideoSpec) -> None:
    k = spec.object_size
    x = int(round(p * (spec.size - k)))
    y = params["across"]
    frame[y:y + k, x:x + k] = 255


def _grow(frame: np.ndarray, p: float, params: dict, spec: VideoSpec) -> None:
    s = spec.size
    r = 2.0 + (s * 0.45 - 2.0) * p
    yy, xx = np.mgrid[0:s, 0:s]
    d = np.sqrt((yy - s / 2 + 0.5) ** 2 + (xx - s / 2 + 0.5) ** 2)
    frame[np.abs(d - r) <= params["thin"] / 2] = 255


def _fill(frame: np.ndarray, p: float, params: dict, spec: VideoSpec) -> None:
    s, k, y = spec.size, params["thin"], params["across"]
    frame[y:y + k, :int(round(2 + p * (s - 2)))] = 255


def _clock(frame: np.ndarray, p: float, params: dict, spec: VideoSpec) -> None:
    s = spec.size
    angle = np.deg2rad(330.0 * p)                   # clockwise from 12 o'clock
    yy, xx = np.mgrid[0:s, 0:s]
    cy = cx = s / 2 - 0.5
    ux, uy = np.sin(angle), -np.cos(angle)          # image y grows downwards
    along = (xx - cx) * ux + (yy - cy) * uy         # distance along the hand
    across = np.abs((xx - cx) * uy - (yy - cy) * ux)
    frame[(along >= 0) & (along <= s * 0.45) & (across <= params["thin"])] = 255


_DRAW = {"slide": _slide, "grow": _grow, "fill": _fill, "clock": _clock}


def render(kind: str, seed: int, spec: VideoSpec | None = None) -> list[np.ndarray]:
    """The frames (H, W, 3) uint8 of one video of `kind`."""
    if kind not in _DRAW:
        raise ValueError(f"kind must be one of {', '.join(KINDS)}")
    spec = spec or VideoSpec()
    rng = np.random.default_rng([seed, KINDS.index(kind)])
    # One fixed direction per kind: the arrow of time is the same in every video.
    params = {"across": int(rng.integers(0, spec.size - spec.object_size + 1)),
              # thin objects: little pixel mass, so whole-frame similarity barely sees them
              "thin": max(2, spec.size // 20)}
    frames = []
    for p in _progress(spec.n_frames()):
        frame = _background(rng, spec)
        _DRAW[kind](frame, float(p), params, spec)
        frames.append(frame)
    return frames


def write_video(path: Path, frames: list[np.ndarray], fps: float) -> Path:
    """H.264 MP4 through moviepy (imageio-ffmpeg's ffmpeg); near-lossless so the object's edges
    survive the encoder. Written to a temporary name and renamed: no half-written file remains."""
    from moviepy import ImageSequenceClip
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    clip = ImageSequenceClip(list(frames), fps=fps)
    try:
        with atomic_path(path, suffix=".tmp" + path.suffix) as tmp:     # ffmpeg picks the container by extension
            clip.write_videofile(str(tmp), codec="libx264", audio=False, logger=None,
                                 ffmpeg_params=["-crf", "12", "-pix_fmt", "yuv420p"])
    finally:
        clip.close()
    return path


def make_videos(out_dir, n: int, seed: int = 0, spec: VideoSpec | None = None,
                kinds: tuple[str, ...] = KINDS, progress: bool = False, workers: int = 1) -> list[Path]:
    """`n` videos `<kind>_<seed>_<i>.mp4` in `out_dir`, kinds in turn, `workers` written at once
    (each video is its own seed, so the files do not depend on the number of workers); existing
    files are kept (re-running with the same arguments is a no-op)."""
    from tqdm import tqdm
    if not 1 <= n <= MAX_VIDEOS:
        raise ValueError(f"n must be between 1 and {MAX_VIDEOS}, not {n}")
    if not 1 <= workers <= 256:
        raise ValueError(f"workers must be between 1 and 256, not {workers}")
    if not kinds:
        raise ValueError(f"no kinds given (kinds: {', '.join(KINDS)})")
    bad = [k for k in kinds if k not in _DRAW]
    if bad:
        raise ValueError(f"unknown kind {bad[0]!r} (kinds: {', '.join(KINDS)})")
    spec = spec or VideoSpec()
    out = Path(out_dir)
    jobs = [(kinds[i % len(kinds)], seed * 100_003 + i, spec, out / f"{kinds[i % len(kinds)]}_{seed}_{i:04d}.mp4")
            for i in range(n)]
    todo = [j for j in jobs if not j[3].is_file()]
    bar = tqdm(total=n, initial=n - len(todo), desc="videos", unit="video", disable=not progress)
    if workers == 1 or len(todo) < 2:
        for job in todo:
            _make_one(job)
            bar.update()
    else:
        import multiprocessing as mp
        from concurrent.futures import ProcessPoolExecutor
        # spawn: a fresh interpreter per worker, nothing of the caller's threads or state forked
        with ProcessPoolExecutor(min(workers, len(todo)), mp_context=mp.get_context("spawn")) as pool:
            for _ in pool.map(_make_one, todo, chunksize=4):
                bar.update()
    bar.close()
    return [j[3] for j in jobs]


def _make_one(job: tuple) -> Path:
    kind, video_seed, spec, path = job
    return write_video(path, render(kind, video_seed, spec), spec.fps)

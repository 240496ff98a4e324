"""Video probing and streaming decode at a target frame rate.

decord first (fast sequential decode; it applies the display rotation itself), PyAV as the fallback
(we apply the rotation). Frames are yielded one at a time so a long video is never held in memory.
Neither library has a time limit of its own and decord can hang or leak on broken files: callers
run these functions in a worker process they can kill (see mvp_core.synth.workers)."""
from __future__ import annotations

import math
import os
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

import numpy as np

from mvp_core.errors import VideoError

VIDEO_EXTENSIONS = {".mp4", ".m4v", ".mov", ".mkv", ".webm", ".avi", ".gif", ".mpg", ".mpeg",
                    ".wmv", ".flv", ".3gp", ".ts", ".ogv"}
MAX_PIXELS = 8192 * 8192  # refuse absurd sizes before decoding a single frame
# A jump between consecutive frames longer than this is a broken timestamp (a concatenated or wrapped
# MPEG-TS jumps ~26 h), not content: frame times continue one frame after the previous one instead.
MAX_GAP_S = 3600.0


@dataclass
class VideoMeta:
    fps: float          # native average frame rate
    duration_s: float
    width: int          # display size (after rotation)
    height: int
    n_frames: int       # 0 when the container does not say
    rotation: int       # degrees the decoded picture must be rotated for display


def not_regular_reason(mode: int) -> str:
    """Why a file of this mode must not be opened ("" for a regular file). Opening a FIFO blocks until
    a writer appears, a device may never end: neither is a video file."""
    if stat.S_ISREG(mode):
        return ""
    if stat.S_ISDIR(mode):
        return "is a directory, not a video file"
    kind = ("a FIFO (named pipe)" if stat.S_ISFIFO(mode) else "a socket" if stat.S_ISSOCK(mode)
            else "a character device" if stat.S_ISCHR(mode) else "a block device" if stat.S_ISBLK(mode)
            else "not a regular file")
    return f"is {kind}, not a regular file" if kind != "not a regular file" else "is not a regular file"


def check_file(path: Path) -> None:
    """Cheap checks before any decoder sees the file (stat follows a symlink to what it names)."""
    try:
        st = os.stat(path)
    except OSError as e:
        raise VideoError(f"cannot read: {e.strerror}") from None
    reason = not_regular_reason(st.st_mode)
    if reason:
        raise VideoError(reason)
    if st.st_size == 0:
        raise VideoError("empty file (0 bytes)")


def probe(path: Path) -> VideoMeta:
    """Metadata through PyAV; raises VideoError with a one-line reason."""
    import av
    check_file(path)
    try:
        with av.open(str(path)) as c:
            if not c.streams.video:
                kinds = sorted({s.type for s in c.streams})
                raise VideoError("no video stream" + (f" (only {', '.join(kinds)})" if kinds else ""))
            s = c.streams.video[0]
            if not s.width or not s.height:
                raise VideoError("video stream has no picture size")
            if s.width * s.height > MAX_PIXELS:
                raise VideoError(f"resolution {s.width}x{s.height} is over the {MAX_PIXELS} pixel limit")
            fps = float(s.average_rate or s.guessed_rate or 0) or 0.0
            if s.duration is not None and s.time_base is not None:
                duration = float(s.duration * s.time_base)
            elif c.duration is not None:
                duration = c.duration / 1e6
            else:
                duration = 0.0
            rotation = 0
            try:  # the display matrix is on decoded frames in PyAV >= 13
                first = next(c.decode(video=0))
                rotation = int(getattr(first, "rotation", 0) or 0) % 360
            except (StopIteration, av.error.EOFError):  # EOFError: a stream header with no packets
                raise VideoError("video stream has no decodable frame") from None
            w, h = (s.height, s.width) if rotation in (90, 270) else (s.width, s.height)
            return VideoMeta(fps=fps, duration_s=duration, width=w, height=h,
                             n_frames=int(s.frames or 0), rotation=rotation)
    except VideoError:
        raise
    except av.error.FFmpegError as e:  # strerror: the message without the errno and the file name
        why = (e.strerror or str(e)).splitlines() or [""]
        raise VideoError(f"not a readable video ({type(e).__name__}: {why[0][:120]})") from None
    except (OSError, ValueError, IndexError) as e:
        raise VideoError(f"not a readable video ({type(e).__name__}: {str(e)[:120]})") from None


def sample_times(duration_s: float, fps: float) -> np.ndarray:
    """The time grid 0, 1/fps, 2/fps, ... strictly inside the video."""
    n = max(1, int(math.floor(duration_s * fps + 1e-6)))
    return np.arange(n, dtype=np.float64) / fps


def pick_indices(frame_starts: np.ndarray, times: np.ndarray) -> list[int]:
    """For each grid time the first frame shown at or after it (within half a frame); duplicates
    dropped. Works on real timestamps, so variable-frame-rate videos sample evenly in time."""
    if len(frame_starts) == 0:
        return []
    half = float(np.median(np.diff(frame_starts))) / 2 if len(frame_starts) > 1 else 0.0
    idx = np.searchsorted(frame_starts, times - half, side="left")
    idx = idx[idx < len(frame_starts)]
    return sorted(set(int(i) for i in idx))


def iter_frames(path: Path, fps: float, max_side: int, backend: str = "auto",
                ) -> Iterator[tuple[float, np.ndarray]]:
    """Yield (t_seconds, RGB uint8 HxWx3 resized so the longest side <= max_side) at about `fps`."""
    if backend in ("auto", "decord"):
        try:
            yield from _iter_decord(path, fps, max_side)
            return
        except _DecordUnusable:
            if backend == "decord":
                raise VideoError("decord cannot open this file") from None
    yield from _iter_pyav(path, fps, max_side)


class _DecordUnusable(Exception):
    pass


def _iter_decord(path: Path, fps: float, max_side: int):
    import decord
    try:
        vr = decord.VideoReader(str(path), ctx=decord.cpu(0), num_threads=1)
        n = len(vr)
        starts = vr.get_frame_timestamp(np.arange(n))[:, 0] if n else np.zeros(0)
    except Exception:  # decord raises its own DECORDError or RuntimeError; PyAV gets a second try
        raise _DecordUnusable() from None
    if n == 0 or not timestamps_usable(starts):
        raise _DecordUnusable()  # PyAV decodes in order and repairs the times (_Clock)
    duration = float(starts[-1]) + (float(np.median(np.diff(starts))) if n > 1 else 0.0)
    wanted = pick_indices(starts, sample_times(duration, fps))
    if not wanted:
        raise _DecordUnusable()
    pos = 0
    for i in wanted:
        if i > pos:
            vr.skip_frames(i - pos)  # decoded (needed by later frames) but not converted
        frame = vr.next().asnumpy()
        pos = i + 1
        if frame.ndim != 3 or frame.shape[2] != 3 or frame.shape[0] < 1 or frame.shape[1] < 1:
            # decord mis-shapes some tiny frames (8x8 comes back as 1x1x12): let PyAV decode instead
            if i == wanted[0]:
                raise _DecordUnusable()
            raise VideoError(f"decoder returned a malformed frame {frame.shape}")
        yield float(starts[i]), resize_max(frame, max_side)


def timestamps_usable(starts: np.ndarray) -> bool:
    """Whether decord's frame start times can drive the sampling: decord reports AV_NOPTS as one
    constant negative time for every frame (MPEG-2 in AVI: no frame was ever sampled), and hangs in
    skip_frames after a timestamp jump (concatenated MPEG-TS)."""
    if not np.all(np.isfinite(starts)) or not -1.0 <= float(starts[0]) <= MAX_GAP_S:
        return False
    d = np.diff(starts)
    return bool(np.all(d >= 0) and np.all(d <= MAX_GAP_S)) and (len(starts) == 1 or starts[-1] > starts[0])


class _Clock:
    """Frame times in seconds from the first frame, kept continuous: a missing timestamp, one that goes
    backwards or one that jumps by more than MAX_GAP_S continues one native frame after the previous."""

    def __init__(self, frame_s: float):
        self.frame_s, self.raw_prev, self.t_prev = frame_s, None, None

    def __call__(self, raw: float | None) -> float:
        if self.t_prev is None:
            t = 0.0
        elif raw is None or self.raw_prev is None or not self.raw_prev <= raw <= self.raw_prev + MAX_GAP_S:
            t = self.t_prev + self.frame_s
        else:
            t = self.t_prev + (raw - self.raw_prev)
        self.raw_prev, self.t_prev = raw, t
        return t


def _iter_pyav(path: Path, fps: float, max_side: int):
    import av
    try:
        container = av.open(str(path))
    except (av.error.FFmpegError, OSError) as e:
        raise VideoError(f"not a readable video ({type(e).__name__})") from None
    with container:
        if not container.streams.video:
            raise VideoError("no video stream")
        stream = container.streams.video[0]
        rate = float(stream.average_rate or stream.guessed_rate or 25)
        half = 0.5 / rate  # half a native frame: the same tolerance as pick_indices
        next_t, step, got = 0.0, 1.0 / fps, False
        clock = _Clock(1.0 / rate)
        try:
            for frame in container.decode(stream):
                t = clock(frame.time)
                if t < next_t - half:
                    continue
                img = frame.to_ndarray(format="rgb24")
                rot = int(getattr(frame, "rotation", 0) or 0) % 360
                if rot:
                    img = np.ascontiguousarray(np.rot90(img, rot // 90))
                got = True
                yield t, resize_max(img, max_side)
                while next_t <= t + half:
                    next_t += step
        except av.error.FFmpegError as e:
            if not got:
                raise VideoError(f"decode failed ({type(e).__name__})") from None
            # a truncated file: keep what decoded


def resize_max(img: np.ndarray, max_side: int) -> np.ndarray:
    h, w = img.shape[:2]
    if max(h, w) <= max_side:
        return img
    from PIL import Image
    scale = max_side / max(h, w)
    size = (max(1, round(w * scale)), max(1, round(h * scale)))
    return np.asarray(Image.fromarray(img).resize(size, Image.BILINEAR))


def native_fps(meta: VideoMeta) -> float:
    if meta.fps > 0:
        return meta.fps
    if meta.n_frames and meta.duration_s > 0:
        return meta.n_frames / meta.duration_s
    return 25.0


def file_sha256(path: Path, chunk: int = 1 << 20) -> str:
    import hashlib
    h = hashlib.sha256()
    with open(path, "rb") as f:
        while True:
            b = f.read(chunk)
            if not b:
                break
            h.update(b)
    return h.hexdigest()

""""Play in gap": context -> candidate -> context as a short H.264 clip, rendered with moviepy.

A curator judges whether a distractor plausibly fits the gap by watching the sequence with the
candidate in place of the masked run. Clips are cached under `<data>/cache/clips/` by a hash of
their frame list, so a second request is a file read; the cache can be deleted at any time."""
from __future__ import annotations

import hashlib
import os
import threading
from pathlib import Path

import numpy as np

from mvp_core.puzzle import Puzzle

SECONDS_PER_FRAME = 0.6     # slow enough to see each frame, short enough that a clip takes ~5 s
CLIP_FPS = 10               # output rate; each frame is repeated, so the file stays tiny
_locks: dict[str, threading.Lock] = {}
_locks_guard = threading.Lock()


def gap_sequence(puzzle: Puzzle, label: str) -> list[str]:
    """Frame uris: the context before the gap, the candidate once per masked slot's position
    (shown once, where the gap starts), then the context after."""
    opt = next((o for o in puzzle.options if o.label == label), None)
    if opt is None:
        raise ValueError(f"puzzle {puzzle.id} has no option {label}")
    return [f.uri for f in puzzle.context_before] + [opt.uri] + [f.uri for f in puzzle.context_after]


def clip_path(data_dir: Path, puzzle: Puzzle, label: str) -> Path:
    uris = gap_sequence(puzzle, label)
    key = hashlib.sha256("\n".join(uris + [str(SECONDS_PER_FRAME)]).encode()).hexdigest()[:24]
    return data_dir / "cache" / "clips" / f"{puzzle.id}_{label}_{key}.mp4"


def render_gap_clip(data_dir: Path, puzzle: Puzzle, label: str) -> Path:
    """The cached clip for this puzzle and option (rendered on first request)."""
    from mvp_core.video.frames import FrameStore
    out = clip_path(data_dir, puzzle, label)
    if out.exists():
        return out
    with _locks_guard:
        lock = _locks.setdefault(str(out), threading.Lock())
    with lock:                                   # two clicks on "play" render once
        if out.exists():
            return out
        store = FrameStore(data_dir)
        frames = [store.load(u) for u in gap_sequence(puzzle, label)]
        frames = _same_size(frames)
        _write_mp4(frames, out)
    return out


def _same_size(frames: list[np.ndarray]) -> list[np.ndarray]:
    """Resize every frame to the first one's size (a cross-video option may differ), even sides."""
    from PIL import Image
    h, w = frames[0].shape[:2]
    h, w = h - h % 2, w - w % 2                  # H.264 with yuv420p needs even sides
    return [f if f.shape[:2] == (h, w) else np.asarray(Image.fromarray(f).resize((w, h))) for f in frames]


def _write_mp4(frames: list[np.ndarray], out: Path) -> None:
    from moviepy import ImageSequenceClip
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_name(f".{out.stem}.{os.getpid()}.{threading.get_ident()}.tmp.mp4")
    clip = ImageSequenceClip(frames, durations=[SECONDS_PER_FRAME] * len(frames))
    try:
        clip.write_videofile(str(tmp), fps=CLIP_FPS, codec="libx264", audio=False, logger=None,
                             ffmpeg_params=["-pix_fmt", "yuv420p", "-movflags", "+faststart"])
    finally:
        clip.close()
    os.replace(tmp, out)                         # never a half-written clip under the final name

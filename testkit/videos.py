"""Real footage re-encoded as tests and benchmarks need it: frames sampled from a real video, frames
encoded with PyAV (VFR with per-frame times), a segment cut with ffmpeg, and the between-scene frames
real videos have (title cards, fades)."""
from __future__ import annotations

import subprocess
from fractions import Fraction
from pathlib import Path

import numpy as np


def real_frames(path: Path, n: int, size: tuple[int, int] | None = None, fps: float = 2.0) -> list[np.ndarray]:
    """n RGB frames sampled at `fps` from a real video, optionally resized to (w, h)."""
    from PIL import Image

    from mvp_core.video.decode import iter_frames
    out = []
    for _, img in iter_frames(path, fps, 4096, backend="pyav"):
        if size:
            img = np.asarray(Image.fromarray(img).resize(size, Image.BILINEAR))
        out.append(img)
        if len(out) == n:
            break
    return out


def write_video(path: Path, frames: list[np.ndarray], fps: int = 4, codec: str = "libx264",
                times: list[float] | None = None, container_format: str | None = None) -> Path:
    """Encode frames with PyAV; `times` (seconds) gives each frame its own timestamp (VFR)."""
    import av
    h, w = frames[0].shape[:2]
    with av.open(str(path), "w", format=container_format) as c:
        rate = Fraction(fps) if times is None else Fraction(1000)
        s = c.add_stream(codec, rate=rate)
        s.width, s.height = w, h
        s.pix_fmt = "rgb8" if codec == "gif" else "yuv420p"
        if times is not None:
            s.time_base = Fraction(1, 1000)
        for i, f in enumerate(frames):
            vf = av.VideoFrame.from_ndarray(f, format="rgb24")
            if times is not None:
                vf.pts = int(round(times[i] * 1000))
                vf.time_base = Fraction(1, 1000)
            for pkt in s.encode(vf):
                c.mux(pkt)
        for pkt in s.encode():
            c.mux(pkt)
    return path


def ffmpeg() -> str:
    import imageio_ffmpeg
    return imageio_ffmpeg.get_ffmpeg_exe()


def cut_segment(src: Path, dst: Path, start_s: float, seconds: float, width: int = 320,
                crop: str | None = None) -> Path:
    """A segment of a real video re-encoded small (optionally cropped first: ffmpeg crop=w:h:x:y), the same
    bytes on every run: one thread and bit-exact flags (threaded decoding and encoding gave a clip that
    differed run to run, and with it the puzzles synthesized from it)."""
    vf = (f"crop={crop}," if crop else "") + f"scale={width}:-2"
    subprocess.run([ffmpeg(), "-y", "-loglevel", "error", "-threads", "1", "-ss", str(start_s), "-t", str(seconds),
                    "-i", str(src), "-an", "-vf", vf, "-threads", "1", "-filter_threads", "1", "-fflags", "+bitexact",
                    "-flags:v", "+bitexact", "-c:v", "libx264", "-preset", "veryfast", "-pix_fmt", "yuv420p",
                    str(dst)], check=True)
    return dst


def _title_card(text: str, size: tuple[int, int] = (320, 180)) -> np.ndarray:
    from PIL import Image, ImageDraw
    im = Image.new("RGB", size, (0, 0, 0))
    ImageDraw.Draw(im).text((size[0] // 4, size[1] // 2 - 6), text, fill=(255, 255, 255))
    return np.asarray(im)


def _fade(a: np.ndarray, colour: int, steps: int) -> list[np.ndarray]:
    flat = np.full_like(a, colour)
    return [((1 - k / steps) * a + (k / steps) * flat).astype(np.uint8) for k in range(1, steps + 1)]

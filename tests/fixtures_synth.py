"""Builders for the synthesis tests: real frames from the sample videos re-encoded into the awkward
files users actually have (VFR, rotated, gif, webm, tiny, huge, truncated, audio-only, ...)."""
from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest
from testkit.videos import _fade, _title_card, cut_segment, ffmpeg, real_frames, write_video  # noqa: F401  (shared with bench/)


def write_audio_only(path: Path, seconds: float = 2.0) -> Path:
    import av
    with av.open(str(path), "w", format="mp4") as c:
        s = c.add_stream("aac", rate=44100)
        t = np.arange(int(44100 * seconds)) / 44100
        samples = (0.2 * np.sin(2 * np.pi * 440 * t)).astype(np.float32)
        for i in range(0, len(samples), 1024):
            chunk = samples[i:i + 1024]
            fr = av.AudioFrame.from_ndarray(chunk.reshape(1, -1), format="flt", layout="mono")
            fr.sample_rate = 44100
            for pkt in s.encode(fr):
                c.mux(pkt)
        for pkt in s.encode():
            c.mux(pkt)
    return path


@pytest.fixture(scope="session")
def bad_corpus(tmp_path_factory, sample_videos) -> tuple[Path, dict[str, str]]:
    """A folder of awkward inputs plus two good videos; returns (folder, {name: expectation}) where the
    expectation is "puzzles" (must yield puzzles) or "skip:<words in the reason>" or "any"."""
    d = tmp_path_factory.mktemp("bad corpus")
    outside = tmp_path_factory.mktemp("outside")
    trailer = real_frames(sample_videos["trailer_bbb"], 40, (320, 180), fps=1.0)
    exp: dict[str, str] = {}

    shutil.copy(sample_videos["bikes"], d / "bikes.mp4"); exp["bikes.mp4"] = "puzzles"
    (d / "zero.mp4").write_bytes(b""); exp["zero.mp4"] = "skip:empty file"
    (d / "notes.mp4").write_text("this is a text file, not a video\n" * 20); exp["notes.mp4"] = "skip:not a readable video"
    raw = sample_videos["trailer_bbb"].read_bytes()
    (d / "truncated.mp4").write_bytes(raw[: len(raw) // 3]); exp["truncated.mp4"] = "any"
    write_audio_only(d / "audio_only.mp4"); exp["audio_only.mp4"] = "skip:no video stream"
    write_video(d / "one_frame.mp4", trailer[5:6]); exp["one_frame.mp4"] = "skip:keyframes"  # [0] is black
    noise = [np.random.default_rng(i).integers(0, 255, (8, 8, 3), dtype=np.uint8) for i in range(40)]
    write_video(d / "tiny_8x8.mp4", noise, fps=4); exp["tiny_8x8.mp4"] = "puzzles"
    big = real_frames(sample_videos["bigbuckbunny"], 6, (3840, 2160), fps=1.0)
    write_video(d / "huge_4k.mp4", big, fps=1); exp["huge_4k.mp4"] = "any"
    times = np.cumsum(np.random.default_rng(0).uniform(0.2, 1.6, len(trailer))).tolist()
    write_video(d / "vfr.mp4", trailer, times=[0.0] + times[:-1]); exp["vfr.mp4"] = "puzzles"
    plain = write_video(outside / "plain.mp4", trailer, fps=1)
    subprocess.run([ffmpeg(), "-y", "-loglevel", "error", "-display_rotation", "90", "-i", str(plain),
                    "-c", "copy", str(d / "rotated_phone.mp4")], check=True); exp["rotated_phone.mp4"] = "puzzles"
    shutil.copy(sample_videos["bikes"], d / "vidéo à la plage 🎬.mp4"); exp["vidéo à la plage 🎬.mp4"] = "puzzles"
    os.symlink(plain, d / "escape.mp4"); exp["escape.mp4"] = "skip:outside the input folder"
    (d / "folder.mp4").mkdir(); exp["folder.mp4"] = "skip:is a directory"
    from PIL import Image
    ims = [Image.fromarray(f) for f in trailer[:30]]
    ims[0].save(d / "anim.gif", save_all=True, append_images=ims[1:], duration=500, loop=0); exp["anim.gif"] = "puzzles"
    # VP9 through the ffmpeg binary: in-process libvpx refuses to open (EINVAL) once torch has run in this process
    subprocess.run([ffmpeg(), "-y", "-loglevel", "error", "-i", str(plain), "-c:v", "libvpx-vp9", "-deadline", "realtime",
                    "-cpu-used", "8", "-b:v", "500k", str(d / "clip.webm")], check=True); exp["clip.webm"] = "puzzles"
    os.mkfifo(d / "hang.mp4"); exp["hang.mp4"] = "skip:is a FIFO (named pipe), not a regular file"
    # names Linux allows: a newline (a good video), and bytes that are not UTF-8, which no database
    # text column can hold (reported in the summary, no row: tests/test_synth_bad_inputs.py)
    shutil.copy(sample_videos["bikes"], d / "new\nline.mp4"); exp["new\nline.mp4"] = "puzzles"
    shutil.copy(sample_videos["bikes"], os.fsdecode(bytes(d) + b"/latin\xe9.mp4"))
    return d, exp


@pytest.fixture(scope="session")
def flat_clips(tmp_path_factory, sample_videos) -> Path:
    """Real trailer frames (320x180, 1 frame/s) cut with what real videos have between scenes:
    a black segment, a fade to white, a static title card, and frames flashing between two shots."""
    d = tmp_path_factory.mktemp("flat clips")
    fr = real_frames(sample_videos["trailer_bbb"], 48, (320, 180), fps=1.0)
    black = np.zeros_like(fr[0])
    white = np.full_like(fr[0], 255)
    write_video(d / "black_segment.mp4", fr[0:12] + [black] * 12 + fr[12:24], fps=1)
    write_video(d / "fade_to_white.mp4", fr[24:36] + _fade(fr[35], 255, 6) + [white] * 6 + fr[36:46], fps=1)
    write_video(d / "title_card.mp4", fr[2:14] + [_title_card("THE END OF PART ONE")] * 10 + fr[14:26], fps=1)
    flashes = [fr[40] if k % 2 else fr[44] for k in range(12)]  # a strobe between two shots
    write_video(d / "flashing.mp4", fr[10:22] + flashes + fr[30:42], fps=1)
    return d


@pytest.fixture(scope="session")
def trailer_clips(sample_videos, tmp_path_factory) -> dict[str, Path]:
    """30 s segments of the real trailer (320 px wide): videos long and varied enough for sound puzzles
    without overlap (a 5 s slow pan such as bigbuckbunny has no frame that is not a near-duplicate of
    a keyframe, so it gives none)."""
    from build_once import build_once
    src = sample_videos["trailer_bbb"]

    def cut(d: Path) -> None:
        cut_segment(src, d / "trailer_a.mp4", 20.0, 30.0)
        cut_segment(src, d / "trailer_b.mp4", 2.0, 30.0, crop="640:720:0:0")
    d = build_once(tmp_path_factory, "trailer-clips", cut)     # only read: every fixture copies the clips
    return {"trailer_a": d / "trailer_a.mp4", "trailer_b": d / "trailer_b.mp4"}

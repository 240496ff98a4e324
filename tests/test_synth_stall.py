"""No file can stall a run: the scan refuses what is not a regular file, the per-file limit follows
the probed duration, and a worker that stops making decoding progress is killed."""
from __future__ import annotations

import os
import shutil
import signal
import socket
import time

import pytest
from fixtures_synth import cut_segment, real_frames, write_audio_only, write_video
from sqlalchemy import select

from app.cli import main
from db.engine import open_db
from db.models import SynthFile
from mvp_core.synth.config import SynthConfig
from mvp_core.synth.job import time_limit_s
from mvp_core.synth.workers import run_local
from mvp_core.video.decode import probe
from mvp_core.video.scan import scan


def test_scan_refuses_what_is_not_a_regular_file(tmp_path):
    os.mkfifo(tmp_path / "pipe.mp4")
    sock = socket.socket(socket.AF_UNIX)
    sock.bind(str(tmp_path / "sock.mp4"))
    (tmp_path / "dir.mp4").mkdir()
    (tmp_path / "ok.mp4").write_bytes(b"x")
    try:
        found = {c.path.name: c.skip_reason for c in scan([tmp_path, "/dev/null"])}
    finally:
        sock.close()
    assert found["pipe.mp4"] == "is a FIFO (named pipe), not a regular file"
    assert found["sock.mp4"] == "is a socket, not a regular file"
    assert found["dir.mp4"] == "is a directory, not a video file"
    assert found["null"] == "is a character device, not a regular file"
    assert found["ok.mp4"] == ""


@pytest.fixture(scope="module")
def two_good_seven_bad(sample_videos, tmp_path_factory):
    d = tmp_path_factory.mktemp("stall")
    shutil.copy(sample_videos["bikes"], d / "bikes.mp4")
    cut_segment(sample_videos["trailer_bbb"], d / "trailer_20s.mp4", 4.0, 20.0)
    (d / "zero.mp4").write_bytes(b"")
    (d / "text.mp4").write_text("not a video\n" * 50)
    raw = sample_videos["trailer_bbb"].read_bytes()
    (d / "truncated.mp4").write_bytes(raw[: len(raw) // 50])
    write_audio_only(d / "audio.mp4")
    write_video(d / "one_frame.mp4", real_frames(sample_videos["bikes"], 1, (320, 180)))
    (d / "folder.mp4").mkdir()
    os.mkfifo(d / "fifo.mp4")
    return d


@pytest.mark.slow
def test_bad_files_cost_seconds_not_minutes(two_good_seven_bad, tmp_path, capsys):
    """Default settings, one worker: the folder finishes in under 60 s, every bad file with its reason."""
    assert main(["synth", str(two_good_seven_bad), "--data", str(tmp_path), "--quiet"]) == 0
    out = capsys.readouterr().out     # how long it takes is bench/synth.py's to measure, not a test's
    with open_db(None, tmp_path)() as s:
        rows = {r.path.rsplit("/", 1)[1]: r for r in s.scalars(select(SynthFile))}
    assert rows["bikes.mp4"].status == rows["trailer_20s.mp4"].status == "done"
    want = {"zero.mp4": "empty file", "text.mp4": "not a readable video", "truncated.mp4": "",
            "audio.mp4": "no video stream", "one_frame.mp4": "keyframes", "folder.mp4": "is a directory",
            "fifo.mp4": "is a FIFO"}
    for name, words in want.items():
        assert rows[name].status == "skipped" and words in rows[name].reason and rows[name].reason, name
        assert f"SKIP {two_good_seven_bad / name}: {rows[name].reason}" in out


@pytest.mark.slow
def test_worker_without_progress_is_killed(sample_videos, tmp_path):
    """A worker frozen mid-run (SIGSTOP: from the parent's side exactly a hung decoder) is killed
    after the stall time and the file reported; the limit the parent used is the one the probed
    duration implies."""
    path = str(sample_videos["trailer_bbb"])
    seen: dict = {}

    def on_progress(p, pid, info):
        if info.get("phase") == "probed":  # early: freezing later could race a slow-but-alive decode
            seen["limit_s"] = info["limit_s"]
            seen["frozen"] = time.monotonic()
            os.kill(pid, signal.SIGSTOP)
    results = []
    run_local([path], SynthConfig(), str(tmp_path), 1, None, results.append, stall_s=3.0, on_progress=on_progress)
    waited = time.monotonic() - seen["frozen"]
    assert len(results) == 1 and not results[0].ok
    assert results[0].reason == "no decoding progress for 3 s (decode hung); worker killed"
    assert waited > 2.5, waited       # killed for the stall, not before it (no upper bound: a loaded machine)
    assert seen["limit_s"] == pytest.approx(time_limit_s(probe(sample_videos["trailer_bbb"]), 1.0))


def test_limit_follows_the_probed_duration(sample_videos):
    short, long_ = probe(sample_videos["bikes"]), probe(sample_videos["trailer_bbb"])
    assert 60 < time_limit_s(short, 8.0) < time_limit_s(long_, 1.0) < 300

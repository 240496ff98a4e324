"""Videos the fixtures never had, made here with the ffmpeg the project ships: each case failed before
(crash, lost video, wrong frame times, memory quadratic in the length, run-order dependent output,
an audit that aborted) and must now give puzzles or one clear line while the run goes on."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path
from types import SimpleNamespace

import pytest
from fixtures_synth import ffmpeg
from sqlalchemy import select

from app.cli import main
from app.cli.synth import _SameSizeInPathOrder
from db.engine import open_db
from db.models import SynthFile
from mvp_core.synth.config import SynthConfig
from mvp_core.synth.job import MAX_SAMPLES, process_video

pytestmark = pytest.mark.slow


def _ff(*args: str) -> None:
    subprocess.run([ffmpeg(), "-hide_banner", "-loglevel", "error", "-y", *args], check=True)


@pytest.fixture(scope="module")
def corpus(tmp_path_factory) -> Path:
    d = tmp_path_factory.mktemp("unseen")
    assert main(["make-videos", str(d / "src"), "--n", "2", "--kinds", "clock", "--seconds", "20"]) == 0
    clock, other = sorted((d / "src").glob("*.mp4"))
    v = d / "videos"
    v.mkdir()
    shutil.copy(clock, v / "good.mp4")
    # MPEG-2 in AVI: decord gives every frame the same negative time (no frame was sampled)
    _ff("-i", str(clock), "-c:v", "mpeg2video", "-q:v", "3", str(v / "mpeg2.avi"))
    # two MPEG-TS segments concatenated, the second with earlier timestamps (read as a ~26 h jump)
    _ff("-i", str(clock), "-t", "10", "-c:v", "libx264", "-f", "mpegts", "-output_ts_offset", "100", str(d / "a.ts"))
    _ff("-ss", "10", "-i", str(clock), "-c:v", "libx264", "-f", "mpegts", str(d / "b.ts"))
    (v / "backwards.ts").write_bytes((d / "a.ts").read_bytes() + (d / "b.ts").read_bytes())
    # a 1-pixel-tall noise video: valid, gives puzzles; the audit's edge feature was NaN on it
    _ff("-f", "lavfi", "-i", "nullsrc=s=64x1:r=2:d=20,geq=lum='random(1)*255':cb=128:cr=128",
        "-c:v", "libx264", "-pix_fmt", "yuv444p", str(v / "line.mp4"))
    # two copies of one video (same size, same content): which one names the video must not depend on
    # which worker finishes first
    shutil.copy(other, v / "copy a.mp4")
    shutil.copy(other, v / "copy b.mp4")
    # symlink loops: the scan raised RuntimeError and the whole run died with a traceback
    os.symlink("loop2.mp4", v / "loop1.mp4")
    os.symlink("loop1.mp4", v / "loop2.mp4")
    os.symlink("self.mp4", v / "self.mp4")
    return v


@pytest.fixture(scope="module")
def static_video(tmp_path_factory) -> Path:
    """A still image for 3700 s at 1 frame/s (32x32): more samples than MAX_SAMPLES at --fps 1."""
    d = tmp_path_factory.mktemp("static")
    _ff("-f", "lavfi", "-i", "testsrc2=s=32x32", "-frames:v", "1", str(d / "still.png"))
    _ff("-loop", "1", "-framerate", "1", "-i", str(d / "still.png"), "-t", "3700", "-c:v", "libx264",
        "-preset", "ultrafast", "-tune", "stillimage", "-pix_fmt", "yuv420p", str(d / "static.mp4"))
    return d / "static.mp4"


@pytest.fixture(scope="module")
def run2(corpus, tmp_path_factory):
    data = tmp_path_factory.mktemp("data2")
    assert main(["synth", str(corpus), "--data", str(data), "--workers", "2", "--quiet"]) == 0
    Session_ = open_db(None, data)
    with Session_() as s:
        rows = {Path(r.path).name: (r.status, r.reason, r.n_puzzles) for r in s.scalars(select(SynthFile))}
    records = [json.loads(line) for line in (data / "puzzles.jsonl").read_text().splitlines()]
    return data, rows, records


def _records_of(records, name):
    return [r for r in records if Path(r["video"]["path"]).name == name]


def test_symlink_loops_are_one_line_each(run2):
    _, rows, _ = run2
    for name in ("loop1.mp4", "loop2.mp4", "self.mp4"):
        status, reason, _ = rows[name]
        assert status == "skipped" and reason.startswith("symlink loop"), (name, reason)
    assert rows["good.mp4"][0] == "done" and rows["good.mp4"][2] > 0


def test_mpeg2_avi_gives_puzzles(run2):
    _, rows, records = run2
    assert rows["mpeg2.avi"][0] == "done", rows["mpeg2.avi"]   # was "no decodable frames"
    ts = [f["t"] for f in _records_of(records, "mpeg2.avi")[0]["frames"]]
    assert ts == sorted(ts) and ts[-1] < 20.5


def test_timestamp_jump_keeps_real_times(run2):
    _, rows, records = run2
    assert rows["backwards.ts"][0] == "done", rows["backwards.ts"]
    for rec in _records_of(records, "backwards.ts"):
        ts = [f["t"] for f in rec["frames"]] + [o["t"] for o in rec["options"]]
        # were ~95344 s (the jump) and a duration of 95353 s
        assert max(ts) < 25 and rec["video"]["duration_s"] < 60, (ts, rec["video"]["duration_s"])


def test_one_pixel_tall_video_and_the_audit(run2, tmp_path, capsys):
    data, rows, records = run2
    assert rows["line.mp4"][0] == "done" and _records_of(records, "line.mp4")
    capsys.readouterr()
    out = tmp_path / "audit.json"
    assert main(["audit", "--data", str(data), "--json", str(out)]) == 0  # was a ValueError traceback
    assert json.loads(out.read_text())["n_puzzles"] == len(records)


def test_copies_give_the_same_bytes_with_1_or_2_workers(run2, corpus, tmp_path):
    data, rows, records = run2
    assert {rows["copy a.mp4"][2], rows["copy b.mp4"][2]} == {0, rows["copy a.mp4"][2] + rows["copy b.mp4"][2]}
    assert _records_of(records, "copy a.mp4") and not _records_of(records, "copy b.mp4")
    assert main(["synth", str(corpus), "--data", str(tmp_path), "--workers", "1", "--quiet"]) == 0
    assert (tmp_path / "puzzles.jsonl").read_bytes() == (data / "puzzles.jsonl").read_bytes()


def test_same_size_results_are_stored_in_path_order():
    todo = {"/v/a.mp4": ("/v/a.mp4", 10, 1), "/v/b.mp4": ("/v/b.mp4", 10, 1), "/v/c.mp4": ("/v/c.mp4", 7, 1)}
    stored: list[str] = []
    order = _SameSizeInPathOrder(todo, lambda res: stored.append(res.path))
    for path in ("/v/b.mp4", "/v/c.mp4", "/v/a.mp4"):   # the workers finish in this order
        order(SimpleNamespace(path=path))
    assert stored == ["/v/c.mp4", "/v/a.mp4", "/v/b.mp4"]


def test_rerun_is_idempotent(run2, corpus, capsys):
    data, _, _ = run2
    before = (data / "puzzles.jsonl").read_bytes()
    capsys.readouterr()
    assert main(["synth", str(corpus), "--data", str(data), "--workers", "2", "--quiet"]) == 0
    out = capsys.readouterr().out
    assert "0 videos done, 0 skipped" in out and "Traceback" not in out
    assert (data / "puzzles.jsonl").read_bytes() == before


def test_long_video_sample_is_bounded(static_video, tmp_path):
    # every sampled frame used to be kept and the planner's matrix is quadratic in their number (a
    # 10-hour video at 1 frame/s needed ~10 GB); past MAX_SAMPLES the sample is thinned to --fps / 2
    res = process_video(str(static_video), SynthConfig(), str(tmp_path))
    assert not res.ok and "sampled at 0.5 fps" in res.reason, res.reason
    assert int(res.reason.split("; ")[1].split()[0]) <= MAX_SAMPLES

"""The generated videos (`mvp make-videos`): real H.264 files the project's decoder reads, whose
object state is monotone in time while the background changes at every frame."""
from __future__ import annotations

import subprocess

import numpy as np
import pytest
from fixtures_grpo import PYTHON, ROOT, mvp_env

from mvp_core.video.synthetic import KINDS, VideoSpec, make_videos, render


def _white(frame: np.ndarray) -> np.ndarray:
    return (frame.min(axis=2) > 225)


def _state(kind: str, frame: np.ndarray) -> float:
    """What moves: the object's centroid (slide), its extent (grow), its pixel count (fill), the
    hand's angle clockwise from 12 o'clock (clock)."""
    w = _white(frame)
    ys, xs = np.nonzero(w)
    if kind == "clock":
        c = frame.shape[0] / 2 - 0.5
        return float(np.degrees(np.arctan2(xs.mean() - c, c - ys.mean())) % 360)
    if kind == "slide":
        return float(xs.mean() + ys.mean())
    if kind == "grow":
        return float(xs.max() - xs.min())
    return float(w.sum())


@pytest.mark.parametrize("kind", KINDS)
def test_rendered_object_is_monotone_in_time(kind):
    for seed in range(4):
        frames = render(kind, seed)
        s = np.array([_state(kind, f) for f in frames])
        d = np.diff(s)
        assert (d >= 0).all() or (d <= 0).all(), (kind, seed, s)
        assert abs(s[-1] - s[0]) > 10
    # the background is redrawn every frame: consecutive frames differ away from the object
    a, b = render(kind, 0)[:2]
    bg = ~(_white(a) | _white(b))
    assert np.abs(a.astype(int) - b.astype(int))[bg].mean() > 10
    assert np.array_equal(render(kind, 3)[5], render(kind, 3)[5])     # a function of the seed


def test_make_videos_cli_writes_decodable_videos(tmp_path):
    r = subprocess.run([PYTHON, "-m", "app.cli", "make-videos", str(tmp_path / "v"), "--n", str(len(KINDS)), "--seed", "2"],
                       cwd=ROOT, env=mvp_env(), capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    files = sorted((tmp_path / "v").glob("*.mp4"))
    assert [f.name.split("_")[0] for f in files] == sorted(KINDS)
    from mvp_core.video.decode import iter_frames, probe
    spec = VideoSpec()
    meta = probe(files[0])
    assert (meta.width, meta.height) == (spec.size, spec.size)
    assert abs(meta.duration_s - spec.seconds) < 1.0
    decoded = [f for _, f in iter_frames(files[0], fps=spec.fps, max_side=640)]
    kind, _, index = files[0].stem.split("_")
    original = render(kind, 2 * 100_003 + int(index))
    assert len(decoded) == len(original)
    # near-lossless encode: the decoded object is where it was drawn
    assert (_white(decoded[6]) == _white(original[6])).mean() > 0.97
    before = {p: p.stat().st_mtime_ns for p in files}
    again = make_videos(tmp_path / "v", len(KINDS), seed=2)                       # re-run: files kept
    assert sorted(again) == files and all(p.stat().st_mtime_ns == before[p] for p in files)


def test_workers_write_the_same_videos(tmp_path):
    """--workers 2 writes the files one worker writes (each video has its own seed), and a rerun
    with some files missing writes only those."""
    from app.cli.main import main
    assert main(["make-videos", str(tmp_path / "one"), "--n", "4", "--seed", "3"]) == 0
    assert main(["make-videos", str(tmp_path / "two"), "--n", "4", "--seed", "3", "--workers", "2"]) == 0
    one, two = sorted((tmp_path / "one").glob("*.mp4")), sorted((tmp_path / "two").glob("*.mp4"))
    assert [p.name for p in one] == [p.name for p in two] and len(one) == 4
    assert all(a.read_bytes() == b.read_bytes() for a, b in zip(one, two))
    two[1].unlink()
    kept = two[0].stat().st_mtime_ns
    assert main(["make-videos", str(tmp_path / "two"), "--n", "4", "--seed", "3", "--workers", "2"]) == 0
    assert two[1].read_bytes() == one[1].read_bytes() and two[0].stat().st_mtime_ns == kept
    assert not list((tmp_path / "two").glob(".*tmp*"))


def test_bad_arguments_are_one_line_errors(tmp_path):
    for args in (["--n", "0"], ["--size", "15"], ["--kinds", "spin"]):
        r = subprocess.run([PYTHON, "-m", "app.cli", "make-videos", str(tmp_path / "v"), *args], cwd=ROOT,
                           env=mvp_env(), capture_output=True, text=True, timeout=120)
        assert r.returncode == 2 and r.stderr.strip().startswith("error: ") and "Traceback" not in r.stderr, r.stderr
        assert not list((tmp_path).glob("v/*.mp4"))


@pytest.mark.parametrize("args,says", [
    (["--seconds", "1e9"], "between 4 and 36000 frames"), (["--seconds", "nan"], "seconds must be a positive number"),
    (["--fps", "0"], "fps must be a positive number"), (["--kinds", ","], "no kinds given"),
    (["--size", "4000"], "size must be an even number"), (["--n", "1000000"], "n must be between 1 and 100000"),
    (["--size", "2048", "--seconds", "600", "--fps", "30"], "GiB in memory"), (["--seed", "-1"], "--seed must be"),
    (["--workers", "0"], "workers must be between 1 and 256")])
def test_unbounded_or_empty_arguments_are_refused_before_any_work(tmp_path, capsys, args, says):
    """A billion-second video would render until the disk or memory ran out; an empty kind list
    divided by zero (a traceback): each is one line, before a file is written."""
    from app.cli.main import main
    assert main(["make-videos", str(tmp_path / "v"), *args]) == 2
    err = capsys.readouterr().err
    assert says in err and err.count("\n") == 1, err
    assert not (tmp_path / "v").exists()

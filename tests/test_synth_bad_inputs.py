"""Every kind of bad input is skipped (or handled, when it is a valid video) with one clear reason,
and never stops the run or costs a good video its puzzles."""
from __future__ import annotations

import json

import pytest
from sqlalchemy import func, select

from app.cli import main
from db.engine import open_db
from db.models import Option, Puzzle, SynthFile

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def bad_run(bad_corpus, tmp_path_factory, capsys_module=None):
    folder, expectations = bad_corpus
    data = tmp_path_factory.mktemp("data_bad")
    rc = main(["synth", str(folder), "--data", str(data), "--workers", "2", "--quiet"])
    assert rc == 0
    Session_ = open_db(None, data)
    with Session_() as s:
        rows = {r.path.rsplit("/", 1)[-1]: r for r in s.scalars(select(SynthFile))}
    return data, Session_, rows, expectations


def test_every_file_gets_an_outcome(bad_run):
    _, _, rows, exp = bad_run
    assert set(exp) <= set(rows), f"files without a recorded outcome: {set(exp) - set(rows)}"


@pytest.mark.parametrize("name", [
    "bikes.mp4", "zero.mp4", "notes.mp4", "truncated.mp4", "audio_only.mp4", "one_frame.mp4", "tiny_8x8.mp4",
    "huge_4k.mp4", "vfr.mp4", "rotated_phone.mp4", "vidéo à la plage 🎬.mp4", "escape.mp4", "folder.mp4",
    "anim.gif", "clip.webm", "hang.mp4", "new\nline.mp4"])
def test_outcome(bad_run, name):
    _, _, rows, exp = bad_run
    row, want = rows[name], exp[name]
    if want == "puzzles":
        assert row.status == "done" and row.n_puzzles + ("same content" in row.reason) > 0, (row.status, row.reason)
    elif want.startswith("skip:"):
        assert row.status == "skipped", (row.status, row.n_puzzles)
        assert want[5:] in row.reason, row.reason
        assert "\n" not in row.reason and len(row.reason) < 300
    else:  # valid-but-odd files: either outcome, but a skip must say why
        assert row.status in ("done", "skipped")
        assert row.status == "done" or row.reason


def test_rotated_video_is_portrait(bad_run):
    _, Session_, rows, _ = bad_run
    with Session_() as s:
        rec = json.loads(s.scalars(select(Puzzle.record_json).where(Puzzle.video_id == rows["rotated_phone.mp4"].video_id)).first())
    assert (rec["video"]["width"], rec["video"]["height"]) == (180, 320)
    from mvp_core.video.frames import FrameStore
    img = FrameStore(bad_run[0]).load(rec["frames"][0]["uri"])
    assert img.shape[0] > img.shape[1]


def test_vfr_samples_follow_real_time(bad_run):
    _, Session_, rows, _ = bad_run
    with Session_() as s:
        recs = [json.loads(r) for r in s.scalars(select(Puzzle.record_json).where(Puzzle.video_id == rows["vfr.mp4"].video_id))]
    ts = [f["t"] for f in recs[0]["frames"]]
    assert ts == sorted(ts) and ts[-1] > 5.0  # seconds, not frame indices


def test_no_half_written_puzzles(bad_run):
    _, Session_, _, _ = bad_run
    with Session_() as s:
        for pid, n in s.execute(select(Puzzle.id, Puzzle.n_options)):
            assert s.scalar(select(func.count()).select_from(Option).where(Option.puzzle_id == pid)) == n


def test_summary_lines(bad_corpus, tmp_path, capsys):
    folder, _ = bad_corpus
    # a second run over the same folder prints nothing new and retries nothing
    main(["synth", str(folder), "--data", str(tmp_path), "--workers", "2", "--quiet"])
    out = capsys.readouterr().out
    assert "SKIP" in out and "zero.mp4: empty file (0 bytes)" in out
    assert "hang.mp4: is a FIFO (named pipe), not a regular file" in out
    # a name that is not UTF-8: one printable line, the run went on (was a UnicodeEncodeError from the database)
    assert "latin\\xe9.mp4: the file name is not valid UTF-8; rename the file to read it\n" in out
    assert "new\\nline.mp4" not in out                  # a good video: no SKIP line

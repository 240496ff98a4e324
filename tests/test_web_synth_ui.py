"""Synthesis from the Data page is idempotent as `mvp synth` is: videos made into puzzles by the CLI
(with the demo's settings) get no new puzzles when Synthesize is pressed with the form's other
defaults (refused with one line), nor when the same settings are asked for again with "more"
ticked (the CLI's own work key: already handled); and the skip reasons speak of the settings the
form gave (app/web/pages/data/ops.py)."""
from __future__ import annotations

import shutil

import pytest
from fixtures_web import Server, WebApp, free_port, login, shot
from testkit.cli import run_mvp

from app.web.pages.data.ops import in_form_words

PW = "rhea-pass-long-1"
DEMO = ["--per-video", "2", "--fps", "3", "--adapt"]        # as scripts/demo.sh synthesizes


@pytest.fixture(scope="module")
def synthed(sample_videos, trailer_clips, tmp_path_factory):
    """A store whose videos the CLI synthesized with the demo's settings; the folder added on the
    Data page (allowed by an admin); `mvp serve` over it."""
    from db.engine import open_db
    from db.puzzles.sources import add_folder, set_allowed_roots
    from db.users.accounts import add_user
    base = tmp_path_factory.mktemp("synth_ui")
    videos, data = base / "videos", base / "data"
    videos.mkdir()
    shutil.copy(trailer_clips["trailer_a"], videos / "trailer_a.mp4")
    shutil.copy(sample_videos["bikes"], videos / "bikes.mp4")
    db_url = f"sqlite:///{data / 'mvp.sqlite'}"
    run_mvp("synth", videos, "--data", data, "--db", db_url, *DEMO, "--quiet", timeout=300)
    Session = open_db(db_url, data)
    with Session() as s:
        add_user(s, "rhea2", "researcher", PW)
        set_allowed_roots(s, [str(videos)])
        add_folder(s, str(videos))
        s.commit()
    srv = Server(data, db_url, free_port(), base / "serve.log").start()
    yield WebApp(srv.url, data, db_url, base / "none", Session)
    srv.stop()


def _puzzles(app) -> int:
    from db.models import Puzzle
    with app.Session() as s:
        return s.query(Puzzle).count()


def test_synthesize_again_adds_no_puzzles(browser, synthed):
    n0 = _puzzles(synthed)
    assert n0 > 0
    ctx, page = login(browser, synthed, "rhea2", PW, path="/datasets/")
    try:
        page.wait_for_selector("#data-files")
        page.click("#data-synth")                        # the form's defaults, not the demo's settings
        page.wait_for_selector("#data-msg .mvp-msg-error")
        assert "nothing to synthesize" in page.inner_text("#data-msg")
        assert _puzzles(synthed) == n0
        shot(page, "web_synth_ui_nothing_to_do")
        # the demo's settings again, "more" ticked: the CLI's own key finds every file handled
        page.fill("#data-per-video input", "2")
        page.fill("#data-fps input", "3")
        page.check("#data-adapt input")
        page.check("#data-more input")
        page.click("#data-synth")
        page.wait_for_selector("#data-msg:has-text('synthesis started')")
        page.wait_for_selector("#synth-status[data-state=done]", timeout=120_000)
        summary = page.inner_text("#synth-summary")
        assert "0 new puzzles" in summary and "2 already handled" in summary, summary
        assert _puzzles(synthed) == n0
        shot(page, "web_synth_ui_again")
    finally:
        ctx.close()


def test_skip_reasons_use_the_forms_settings():
    reason = ("no puzzle passes the guard; 12 frames sampled at 16 fps, 5 distinct keyframes found; "
              "--n 5 --l 3 (or --adapt) would admit it")
    shown = in_form_words(reason, {"fps": 1.0})
    assert "sampled at 16 fps (the form's 1 fps, raised for a short video)" in shown
    assert "N 5, l 3 (or tick adapt)" in shown and "--" not in shown
    assert in_form_words("x; 8 frames sampled at 1 fps", {"fps": 1.0}) == "x; 8 frames sampled at 1 fps"


def test_skip_reasons_split_after_the_path(tmp_path):
    """A reason holding ": " itself ("fewer masked frames would: ...") keeps it, and so does a file
    name holding one: the path is what names an existing file, and the reason is said in the form's
    words (the form's fps beside the raised one)."""
    from app.web.pages.data.ops import skipped_rows
    odd = tmp_path / "clip: take 2.mp4"
    odd.write_bytes(b"")
    reason = ("no puzzle passes the guard; 63 frames sampled at 16 fps, 5 distinct keyframes found; no shape down "
              "to N=m+2, l=2 passes the guard (fewer masked frames would: --m 1 --n 5 --l 2)")
    rows = skipped_rows(["synth: 1 video", f"  SKIP {tmp_path / 'short.mp4'}: {reason}", f"  SKIP {odd}: {reason}"],
                        {"fps": 1.0})
    assert [r[0] for r in rows] == ["short.mp4", "clip: take 2.mp4"]
    for _, shown in rows:
        assert "sampled at 16 fps (the form's 1 fps, raised for a short video)" in shown, shown
        assert "fewer masked frames would: m 1, N 5, l 2)" in shown and "--" not in shown, shown

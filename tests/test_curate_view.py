"""The curate view's templates (app/web/pages/curate/curate_*.html): a blind view says nothing about
targets, the revealed one marks them and scores the answer, and every value is escaped."""
from __future__ import annotations

from curate_steps import assert_blind

from app.web.pages.curate.view import filter_html, filmstrip_html, list_html, progress_html, puzzle_html
from mvp_core.puzzle import Puzzle

RECORD = {"id": "p<1>", "answer": ["C", "A"], "mask": {"start": 1, "length": 2},
          "frames": [{"t": float(i), "uri": f"frames/ab/f{i}.jpg"} for i in range(4)],
          "options": [{"label": lab, "uri": f"frames/ab/f{2 if lab == 'A' else 1}.jpg" if lab in "CA"
                       else f"frames/ab/{lab}.jpg", "t": {"A": 2.0, "C": 1.0}.get(lab, 7.5),
                       "kind": "target" if lab in "CA" else "neighbor", "difficulty": 1.0 if lab in "CA" else 0.25,
                       "source_video_id": "v1"} for lab in "ABCD"],
          "video": {"id": "v1", "path": "/videos/<script>evil.mp4", "sha256": "0" * 64, "fps": 1.0,
                    "duration_s": 4.0, "width": 64, "height": 64},
          "params": {"N": 4, "m": 2, "l": 2, "fps": 1.0, "kappa": 0.95, "embedder": "pixel", "seed": 0,
                     "synth_version": "2"}}


def test_blind_view_names_no_target_and_escapes():
    p = Puzzle.from_dict(RECORD)
    html = str(puzzle_html(p, {}, None, "pending", None))
    assert_blind(html, RECORD)
    assert "<script>" not in html and "&lt;script&gt;evil.mp4" in html
    assert 'data-puzzle-id="p&lt;1&gt;"' in html and 'data-phase="answer"' in html
    assert html.count('class="mvp-gap-slot" data-slot=') == 2


def test_revealed_view_fills_the_gap_and_marks_targets():
    p = Puzzle.from_dict(RECORD)
    ans = {"labels": ["A", "C"], "exact": 0.0, "total": 0.4, "seconds": 3.25}
    html = str(puzzle_html(p, {"B": {"verdict": "reject", "reason_code": "too_easy"}}, {"verdict": "accept"},
                           "accepted", ans, "clip.mp4"))
    assert 'data-phase="vet"' in html and 'data-answer="C,A"' in html
    assert html.count('class="mvp-opt target"') == 2 and 'data-state="reject"' in html
    assert "rejected: too_easy" in html and "your answer: <b>A, C</b>" in html and "not exact" in html
    assert "C · 1.00s" in html and "A · 2.00s" in html          # the true frames in the gap, by label
    assert "video <b class=\"mvp-video-name\">clip.mp4</b>" in html and "your verdict: accept" in html
    assert str(filmstrip_html(p, answered=False)).count("data-slot=") == 2


def test_empty_progress_list_and_filter():
    assert "Nothing left to review" in str(puzzle_html(None, {}, None, "", None))
    html = str(progress_html({"total": 4, "everyone": {"reviewed": 1, "verdicts": 2}, "mine": {"skipped": 3}}))
    assert 'style="width:25.0%"' in html and "3 skipped (not verdicts)" in html
    rows = [{"puzzle_id": "<x>", "video": "a&b.mp4", "status": "pending", "n_reviews": 0, "mine": "skip",
             "answered": 1.0, "difficulty": 0.5}]
    html = str(list_html(rows))
    assert "&lt;x&gt;" in html and "a&amp;b.mp4" in html and "<td>exact</td>" in html and "<td>0.50</td>" in html
    assert str(list_html([])).strip() == ""
    html = str(filter_html([("v1", "<i>.mp4")], ["pending", "skipped"], ["neighbor"]))
    assert '<option value="v1">&lt;i&gt;.mp4</option>' in html and '<option value="skipped">' in html

"""`--cross-video K`: K distractors from other videos of the run, matched by embedding, behind the
same guard (checked from the stored frames), reported per kind by the audit."""
from __future__ import annotations

import json
import shutil

import pytest

from app.cli import main
from mvp_core.puzzle import Puzzle
from mvp_core.synth.audit import audit
from mvp_core.video.frames import FrameStore

pytestmark = pytest.mark.slow


def test_cross_video_distractors(trailer_clips, sample_videos, tmp_path):
    src = tmp_path / "videos"
    src.mkdir()
    for name, p in trailer_clips.items():
        shutil.copy(p, src / f"{name}.mp4")
    shutil.copy(sample_videos["bikes"], src / "bikes.mp4")
    data = tmp_path / "data"
    assert main(["synth", str(src), "--data", str(data), "--cross-video", "2", "--workers", "2", "--quiet"]) == 0
    recs = [json.loads(line) for line in (data / "puzzles.jsonl").read_text().splitlines()]
    assert len({r["video"]["id"] for r in recs}) == 3
    store = FrameStore(data)
    for r in recs:
        cross = [o for o in r["options"] if o["kind"] == "cross_video"]
        assert len(cross) == 2 and all(o["source_video_id"] != r["video"]["id"] for o in cross)
        assert [o["label"] for o in r["options"]] == list("ABCDEFGHI")
        by_label = {o["label"]: o for o in r["options"]}
        s, m = r["mask"]["start"], r["mask"]["length"]
        assert [by_label[a]["uri"] for a in r["answer"]] == [f["uri"] for f in r["frames"][s:s + m]]
        assert all(store.path(o["uri"]).is_file() and 0 <= o["difficulty"] <= 1 for o in cross)
    rep = audit([Puzzle.from_dict(r) for r in recs], store.load)
    assert rep["guard"]["checked"] == len(recs) and rep["guard"]["puzzles_with_any"] == 0
    assert any("cross_video" in g for g in rep["groups"])
    assert "cross_video" in rep["pick_rate_by_kind"]["boundary"]

"""Synthesis that fits the video (SynthConfig.adapt, docs/SYNTHESIS.md): the short sample video that gives
no puzzle at N=8, l=4 gives puzzles at a smaller shape with the ambiguity guard unchanged; without
--adapt the skip names the shape that would admit it; the same run twice adds nothing."""
from __future__ import annotations

import json
import shutil

from app.cli.main import main


def test_adapt_admits_a_short_video_with_the_guard_unchanged(sample_videos, tmp_path, capsys):
    videos = tmp_path / "videos"
    videos.mkdir()
    shutil.copy(sample_videos["bigbuckbunny"], videos / "bigbuckbunny.mp4")
    plain = tmp_path / "plain"
    assert main(["synth", str(videos), "--data", str(plain), "--per-video", "4", "--quiet"]) == 0
    out = capsys.readouterr().out
    assert "SKIP" in out and "(or --adapt) would admit it" in out, out
    hint = out.split("; --n ", 1)[1].split(" (or", 1)[0]          # e.g. "7 --l 2"
    n, l = int(hint.split()[0]), int(hint.split()[-1])

    data = tmp_path / "adapted"
    args = ["synth", str(videos), "--data", str(data), "--per-video", "4", "--quiet", "--adapt"]
    assert main(args) == 0
    recs = [json.loads(x) for x in (data / "puzzles.jsonl").read_text().splitlines()]
    assert recs, capsys.readouterr().out
    for r in recs:                            # the shape used is recorded, and it is the one the hint named
        assert (r["params"]["N"], r["params"]["l"]) == (n, l)
        assert len(r["frames"]) == n and len(r["options"]) == r["params"]["m"] + l
    report = data / "audit.json"
    assert main(["audit", "--data", str(data), "--json", str(report)]) == 0
    guard = json.loads(report.read_text())["guard"]
    assert guard["checked"] == len(recs) and guard["puzzles_with_any"] == 0, guard

    capsys.readouterr()
    assert main(args) == 0                   # idempotent: same video, same settings, nothing new
    assert "0 new puzzles" in capsys.readouterr().out
    assert len((data / "puzzles.jsonl").read_text().splitlines()) == len(recs)

"""The demo's closing table (app/cli/demo_summary.py) on real sample videos: a video that gives puzzles is
counted, a video that gives none is listed with the reason, and that reason names the setting that admits
it; the named setting, applied, gives puzzles with the ambiguity guard unchanged."""
from __future__ import annotations

import json
import re
import shutil

from app.cli.demo_summary import summary
from app.cli.main import main
from db.engine import open_db


def test_the_summary_counts_puzzles_and_says_why_a_video_gave_none(sample_videos, tmp_path, capsys):
    videos = tmp_path / "videos"
    videos.mkdir()
    for name in ("bigbuckbunny", "carphone_pristine"):
        shutil.copy(sample_videos[name], videos / f"{name}.mp4")
    data = tmp_path / "data"
    assert main(["synth", str(videos), "--data", str(data), "--per-video", "8", "--fps", "3", "--adapt", "--quiet"]) == 0
    made = len((data / "puzzles.jsonl").read_text().splitlines())
    assert made > 0
    table = summary(open_db(None, data), data, [], [])
    assert f"| bigbuckbunny.mp4 | {made} |" in table, table
    assert f"| all real footage | {made} |" in table, table
    row = next(line for line in table.splitlines() if line.startswith("| carphone_pristine.mp4 | 0: "))
    setting = re.search(r"--m (\d+) --n (\d+) --l (\d+)", row)
    assert setting, row

    capsys.readouterr()
    only = tmp_path / "carphone"
    only.mkdir()
    shutil.copy(videos / "carphone_pristine.mp4", only / "carphone_pristine.mp4")
    admit = tmp_path / "admit"
    m, n, l = setting.groups()
    assert main(["synth", str(only), "--data", str(admit), "--per-video", "8", "--fps", "3", "--quiet",
                 "--m", m, "--n", n, "--l", l]) == 0
    recs = [json.loads(x) for x in (admit / "puzzles.jsonl").read_text().splitlines()]
    assert recs and all((r["params"]["m"], r["params"]["N"], r["params"]["l"]) == (int(m), int(n), int(l)) for r in recs)
    report = admit / "audit.json"
    assert main(["audit", "--data", str(admit), "--json", str(report)]) == 0
    guard = json.loads(report.read_text())["guard"]
    assert guard["checked"] == len(recs) and guard["puzzles_with_any"] == 0, guard

"""The learning-proof numbers (mvp_core/stats/learning.py) and bench/learning_pool.py, which prints them:
differences paired by puzzle, videos resampled within each run, chance computed exactly."""
from __future__ import annotations

import json
import subprocess
import sys

import pytest
from fixtures_grpo import ROOT

from mvp_core.stats.learning import paired_diffs, pooled_diff_ci


def _diffs(diffs_by_video: dict[str, list[float]]):
    video_of, a, b = {}, {}, {}
    for v, diffs in diffs_by_video.items():
        for i, d in enumerate(diffs):
            pid = f"{v}-{i}"
            video_of[pid], a[pid], b[pid] = v, 0.5 + d, 0.5
    return paired_diffs(video_of, a, b)


def test_pooled_difference_pairs_by_puzzle_and_resamples_videos_within_runs():
    ra = _diffs({f"v{i}": [0.1, 0.0] for i in range(30)})                 # +0.05 per puzzle
    rb = _diffs({f"w{i}": [0.0, 0.0, -0.03] for i in range(30)})          # -0.01 per puzzle
    assert len(ra[0]) == 60 and sorted(set(ra[1])) == sorted(f"v{i}" for i in range(30))
    one = pooled_diff_ci([ra])
    assert (one.mean, one.lo, one.hi) == pytest.approx((0.05, 0.05, 0.05))   # no spread between videos
    both = pooled_diff_ci([ra, rb])
    assert both.mean == pytest.approx((60 * 0.05 - 90 * 0.01) / 150)
    assert both.lo - 1e-12 <= both.mean <= both.hi + 1e-12 and both.hi - both.lo < 0.02     # runs are kept whole: little spread
    coin = pooled_diff_ci([_diffs({f"u{i}": [0.2 if i % 2 else -0.2] for i in range(40)})])
    assert abs(coin.mean) < 1e-9 and coin.lo < 0 < coin.hi                   # a coin flip's interval spans 0


def test_pairing_keeps_only_puzzles_both_systems_scored():
    diffs, videos = paired_diffs({"p1": "v", "p2": "v", "p3": "w"}, {"p1": 1.0, "p3": 0.0}, {"p1": 0.5, "p2": 0.0, "p3": 1.0})
    assert diffs == [0.5, -1.0] and videos == ["v", "w"]


def _work(work, diffs_by_video: dict[str, list[float]]):
    """A learning-proof work directory with only what bench/learning_pool.py reads."""
    (work / "test").mkdir(parents=True)
    (work / "eval").mkdir()
    recs, sft, grpo = [], [], []
    for v, diffs in diffs_by_video.items():
        for i, d in enumerate(diffs):
            pid = f"{v}-{i}"
            recs.append(json.dumps({"id": pid, "video": {"id": v}}))
            sft.append({"id": pid, "model_total": 0.5})
            grpo.append({"id": pid, "model_total": 0.5 + d})
    (work / "test" / "puzzles.jsonl").write_text("\n".join(recs) + "\n")
    (work / "eval" / "sft.json").write_text(json.dumps({"puzzles": sft}))
    (work / "eval" / "grpo.json").write_text(json.dumps({"puzzles": list(reversed(grpo))}))  # paired by id


def test_pool_script_writes_json_report(tmp_path):
    _work(tmp_path / "a", {f"v{i}": [0.1, 0.0] for i in range(10)})
    _work(tmp_path / "b", {f"w{i}": [0.02] for i in range(10)})
    r = subprocess.run([sys.executable, "bench/learning_pool.py", str(tmp_path / "a"), str(tmp_path / "b"),
                        "--out", str(tmp_path / "pool.json")], cwd=ROOT, capture_output=True, text=True, timeout=120,
                       env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"})
    assert r.returncode == 0, r.stderr
    rep = json.loads((tmp_path / "pool.json").read_text())
    assert [x["n_test"] for x in rep["runs"]] == [20, 10] and rep["n_test"] == 30 and rep["n_videos"] == 20
    assert rep["grpo_minus_sft"]["reward"] == pytest.approx((20 * 0.05 + 10 * 0.02) / 30)
    lo, hi = rep["grpo_minus_sft"]["reward_ci"]
    assert lo <= rep["grpo_minus_sft"]["reward"] <= hi
    assert "pooled: 30 puzzles" in r.stdout

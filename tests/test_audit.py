"""The shortcut audit: solvers, chance levels, and the hardness control on the real sample videos."""
from __future__ import annotations

import itertools
import json
import shutil

import pytest

from app.cli import main
from mvp_core.puzzle import Puzzle
from mvp_core.reward import score_prediction
from mvp_core.synth.audit import SOLVERS, FeatureCache, audit, chance_exact
from mvp_core.video.frames import FrameStore

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def hard_and_random(sample_videos, tmp_path_factory):
    src = tmp_path_factory.mktemp("audit_in")
    for name in ("trailer_bbb", "bikes", "bigbuckbunny"):
        shutil.copy(sample_videos[name], src / f"{name}.mp4")
    data = tmp_path_factory.mktemp("audit_data")
    for h in ("hard", "random"):
        assert main(["synth", str(src), "--data", str(data), "--per-video", "12", "--hardness", h,
                     "--workers", "2", "--quiet"]) == 0
    return data


def test_hard_distractors_lower_the_best_heuristic(hard_and_random, capsys):
    data = hard_and_random
    out = data / "audit.json"
    assert main(["audit", "--data", str(data), "--json", str(out)]) == 0
    table = capsys.readouterr().out
    assert "boundary" in table and "histogram" in table and "chance exact" in table
    rep = json.loads(out.read_text())
    hard, rnd = rep["groups"]["neighbor"], rep["groups"]["random"]
    assert hard["n"] >= 20 and rnd["n"] >= 20
    heuristics = ("boundary", "histogram")
    best_hard = max(hard["solvers"][s]["mean_reward"] for s in heuristics)
    best_rand = max(rnd["solvers"][s]["mean_reward"] for s in heuristics)
    assert best_hard < best_rand, (best_hard, best_rand)
    # the heuristics beat the random solver: the audit measures something
    assert rep["groups"]["all"]["solvers"]["boundary"]["mean_reward"] > rep["groups"]["all"]["solvers"]["random"]["mean_reward"]


def test_random_solver_matches_analytic_chance(hard_and_random):
    recs = [Puzzle.from_dict(json.loads(line)) for line in (hard_and_random / "puzzles.jsonl").read_text().splitlines()]
    p = recs[0]
    pool = [o.label for o in p.options]
    # exact expectation of the reward of a uniformly random ordered pick of m labels
    picks = list(itertools.permutations(pool, p.mask.length))
    expected = sum(score_prediction(list(x), p.answer, pool).total for x in picks) / len(picks)
    assert chance_exact(p) == pytest.approx(1 / len(picks))
    rep = audit(recs, FrameStore(hard_and_random).load, ["random"])
    assert rep["groups"]["all"]["solvers"]["random"]["mean_reward"] == pytest.approx(expected, abs=0.06)


def test_boundary_solver_solves_an_easy_puzzle(hard_and_random):
    """Distractors from another video: continuity finds the targets and their order."""
    store = FrameStore(hard_and_random)
    recs = [Puzzle.from_dict(json.loads(line)) for line in (hard_and_random / "puzzles.jsonl").read_text().splitlines()]
    bikes = next(p for p in recs if p.video.path.endswith("bikes.mp4"))
    other = [o for p in recs if not p.video.path.endswith("bikes.mp4") for o in p.options][:20]
    easy = Puzzle.from_dict(bikes.to_dict())
    for o in easy.options:
        if o.kind != "target":
            o.uri = other.pop().uri
    labels = SOLVERS["boundary"](easy, FeatureCache(store.load))
    assert sorted(labels) == sorted(easy.answer)


def test_audit_cli_bad_input(tmp_path, capsys):
    bad = tmp_path / "p.jsonl"
    bad.write_text('{"id": "x"}\n')
    assert main(["audit", "--puzzles", str(bad)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "not a puzzle record" in err
    assert main(["audit", "--puzzles", str(tmp_path / "missing.jsonl")]) == 2

"""The shortcut audit: solvers, chance levels, intervals and flags, the guard re-checked from stored
frames, and the hardness control on the real sample videos."""
from __future__ import annotations

import itertools
import json
import shutil

import numpy as np
import pytest

from app.cli import main
from mvp_core.puzzle import Puzzle, VideoInfo
from mvp_core.reward import score_prediction
from mvp_core.stats.bootstrap import ci
from mvp_core.synth.audit import SOLVERS, FeatureCache, audit, chance_exact, guard_check
from mvp_core.video.frames import FrameStore

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def hard_and_random(sample_videos, tmp_path_factory):
    """`mvp synth` + `mvp audit` on real videos (hard distractors; bigbuckbunny is skipped by the guard)."""
    src = tmp_path_factory.mktemp("audit_in")
    for name in ("trailer_bbb", "bikes", "bigbuckbunny"):
        shutil.copy(sample_videos[name], src / f"{name}.mp4")
    data = tmp_path_factory.mktemp("audit_data")
    # overlapping puzzles allowed: more puzzles per video for these checks
    assert main(["synth", str(src), "--data", str(data), "--per-video", "12", "--workers", "2", "--quiet",
                 "--max-overlap", "1"]) == 0
    return data


@pytest.fixture(scope="module")
def planned(sample_videos):
    """Puzzles planned in memory from the frames `mvp synth` samples (same decode, JPEGs, embeddings,
    planner and records), for many seeds at once: enough puzzles to compare hard and random
    distractors without synthesising the videos again per seed."""
    from mvp_core.synth.config import SynthConfig
    from mvp_core.synth.embed import decode_jpeg
    from mvp_core.synth.job import _embedder, _record, _sample, sampling_rates
    from mvp_core.synth.plan import plan_puzzles
    from mvp_core.video.decode import pick_indices, probe, sample_times
    frames, out = {}, {"hard": [], "random": []}
    for name in ("trailer_bbb", "bikes"):
        path = sample_videos[name]
        meta = probe(path)
        rates = sampling_rates(meta, SynthConfig())
        times, E, jpegs, flat = _sample(path, rates[-1], 640, _embedder("pixel", lambda info: None), lambda info: None)
        for rate in rates:  # as mvp synth does: the slowest rate that gives puzzles
            grid = pick_indices(np.asarray(times), sample_times(times[-1] + 1 / rates[-1], rate))
            keep = [i for i in grid if not flat[i]]
            if plan_puzzles(E[keep], SynthConfig(), 0.95, 0)[0]:
                break
        uris = {k: f"mem/{name}/{k}" for k in range(len(keep))}
        frames.update({uris[k]: decode_jpeg(jpegs[i]) for k, i in enumerate(keep)})
        video = VideoInfo(id=name, path=str(path), sha256=name, fps=meta.fps, duration_s=meta.duration_s,
                          width=meta.width, height=meta.height)
        for hardness in out:
            cfg = SynthConfig(per_video=12, max_overlap=1.0, hardness=hardness)
            for seed in range(6):
                layouts, _ = plan_puzzles(E[keep], cfg, 0.95, seed)
                out[hardness] += [_record(lay, video, [times[i] for i in keep],
                                          {k: uris[k] for k in range(len(keep))}, cfg, 0.95, rate)
                                  for lay in layouts]
    return out, frames.__getitem__


def test_hard_distractors_lower_the_best_heuristic(planned):
    by_hardness, load = planned
    hard = audit(by_hardness["hard"], load, check_guard=False)
    rnd = audit(by_hardness["random"], load, check_guard=False)
    assert hard["n_puzzles"] >= 100 and rnd["n_puzzles"] >= 100
    heuristics = [s for s in SOLVERS if s != "random"]
    best = lambda rep: max(rep["groups"]["all"]["solvers"][s]["exact"] for s in heuristics)
    assert best(hard) < best(rnd), (best(hard), best(rnd))
    # the hard distractors are the ones the continuity heuristic falls for
    assert hard["pick_rate_by_kind"]["boundary"]["neighbor"] > rnd["pick_rate_by_kind"]["boundary"]["random"]


def test_audit_cli_report(hard_and_random, capsys):
    data = hard_and_random
    out = data / "audit.json"
    assert main(["audit", "--data", str(data), "--json", str(out)]) == 0
    table = capsys.readouterr().out
    assert "boundary" in table and "context_boundary" in table and "chance exact" in table and "FLAG" in table
    rep = json.loads(out.read_text())
    allg = rep["groups"]["all"]
    assert allg["n"] >= 20
    for name, row in allg["solvers"].items():
        lo, hi = row["exact_ci95"]
        assert lo <= row["exact"] <= hi and row["reward_ci95"][0] <= row["mean_reward"] <= row["reward_ci95"][1]
        assert row["flagged"] == (lo > rep["flag_factor"] * allg["chance_exact"])
    assert allg["solvers"]["boundary"]["mean_reward"] > allg["solvers"]["random"]["mean_reward"]
    assert "boundary" in allg["flagged"] and "random" not in allg["flagged"]
    assert rep["guard"]["checked"] == allg["n"] and rep["guard"]["puzzles_with_any"] == 0
    # against the store, each solver's result per puzzle is kept: the report's exact match, per puzzle
    assert f"stored each solver's result on {allg['n']} puzzles" in table
    from sqlalchemy import func, select

    from db.engine import open_db
    from db.models.audit import PuzzleAudit
    with open_db(None, data)() as s:
        for name, row in allg["solvers"].items():
            n, mean = s.execute(select(func.count(), func.avg(PuzzleAudit.exact)).where(PuzzleAudit.solver == name)).one()
            assert n == allg["n"] and mean == pytest.approx(row["exact"])


def test_context_match_solver_and_guard_check_see_a_copied_context_frame(hard_and_random):
    """A distractor that copies a shown frame: the guard check counts it, context_boundary drops it."""
    store = FrameStore(hard_and_random)
    recs = [Puzzle.from_dict(json.loads(line)) for line in (hard_and_random / "puzzles.jsonl").read_text().splitlines()]
    feats = FeatureCache(store.load)
    assert guard_check(recs, feats)["puzzles_with_any"] == 0
    bad = Puzzle.from_dict(recs[0].to_dict())
    left = bad.frames[bad.mask.start - 1]
    victim = next(o for o in bad.options if o.kind != "target")
    victim.uri = left.uri
    assert guard_check([bad], feats)["distractor_shown"] >= 1
    assert victim.label not in SOLVERS["context_boundary"](bad, feats)
    assert victim.label in SOLVERS["boundary"](bad, feats)  # the copy is the best continuity match


def test_bootstrap_interval():
    """The audit's intervals come from the one bootstrap; 100 puzzles of 100 videos: the textbook interval."""
    lo, hi = ci([0.0] * 80 + [1.0] * 20, list(range(100)))
    assert 0.1 < lo < 0.2 < hi < 0.3
    assert ci([1.0, 1.0], ["a", "b"]) == (1.0, 1.0)


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
    capsys.readouterr()
    bad.write_bytes(b'{"id": "caf\xe9"}\n')          # Latin-1, not UTF-8
    assert main(["audit", "--puzzles", str(bad)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and f"{bad}:1: not UTF-8 text" in err

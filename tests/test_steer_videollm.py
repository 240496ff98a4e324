"""Energy steering on the VideoLLM, end to end through `mvp steer`: labels from answers stored in the
database (a shortcut-solver run, scored by the project's reward; no trained checkpoint is on main),
states of the tiny Qwen2.5-VL over real-frame puzzles, energies split by video, and exact match /
reward steered vs unsteered on the held-out video's puzzles (reported, no target on the sign); and
labels from curator verdicts instead of answers."""
from __future__ import annotations

import json

import pytest
from fixtures_model import dir_loader, make_puzzles
from testkit.cli import run_mvp_here

VIDEOS = {"bikes": (4.0, 9.5), "trailer_bbb": (1.0, 24.0), "bigbuckbunny": (4.0, 4.9), "carphone_pristine": (5.0, 3.9)}


@pytest.fixture(scope="module")
def solver_run(tmp_path_factory, sample_videos):
    """Puzzles over 4 real videos (one split per video) and a run of boundary-solver answers in SQLite."""
    from db.engine import open_db
    from db.runs.rollouts import RolloutStore
    from mvp_core.model.rollout import score_group
    from mvp_core.puzzle import Puzzle
    from mvp_core.synth.solvers import FeatureCache, solve_boundary
    data = tmp_path_factory.mktemp("steer_vl")
    recs = []
    for i, (name, (fps, max_s)) in enumerate(VIDEOS.items()):
        recs += make_puzzles(sample_videos[name], data, fps=fps, max_s=max_s, k=6, seed=10 + i)
    split = dict(zip(VIDEOS, ["train", "train", "val", "test"]))
    for r in recs:
        r["split"] = split[r["video"]["id"]]
    (data / "puzzles.jsonl").write_text("".join(json.dumps(r) + "\n" for r in recs))
    db = f"sqlite:///{data / 'mvp.db'}"
    store = RolloutStore(open_db(db, data), "solver-boundary", records=recs)
    feats = FeatureCache(dir_loader(data))
    rows = []
    for r in recs:
        pz = Puzzle.from_dict(r)
        ans = ", ".join(solve_boundary(pz, feats))
        rows += score_group(pz, [(f"<think>nearest frames</think><answer>{ans}</answer>", 8)], [0])
    store.add(rows)
    return data, db, recs, rows


def _mvp(*args):
    return run_mvp_here(*args, check=True).stdout


@pytest.mark.slow
def test_videollm_energy_from_stored_answers_and_steered_exact(solver_run, tiny_model_dir, tmp_path):
    from mvp_core.steer.bank import EnergyBank
    from mvp_core.steer.states import load_states
    data, db, recs, rows = solver_run
    common = ["--model", str(tiny_model_dir), "--puzzles", str(data / "puzzles.jsonl"), "--data", str(data),
              "--db", db, "--threads", "1", "--batch-size", "4"]
    out = _mvp("steer", "collect", *common, "--run", "solver-boundary", "--reward-threshold", "0.6",
               "--out", str(tmp_path / "states.pt"))
    assert "puzzle states from run solver-boundary" in out
    blob = load_states(tmp_path / "states.pt")
    right = {r["puzzle_id"] for r in rows if r["exact"] == 1.0 or r["total"] >= 0.6}
    assert [not b for b in blob["bad"].tolist()] == [i in right for i in blob["items"]]
    assert tuple(blob["states"].shape[:2]) == (len(recs), 2)      # every puzzle, the tiny model's 2 layers
    assert blob["extra"]["splits"] == [r["split"] for r in recs]
    out = _mvp("steer", "train", str(tmp_path / "states.pt"), "--out", str(tmp_path / "bank.pt"),
               "--hidden", "64,32", "--epochs", "30", "--lr", "1e-3", "--batch-size", "16", "--top-k", "2")
    assert "test_auroc" in out
    bank = EnergyBank.load(tmp_path / "bank.pt")
    assert bank.metrics[0].n_test == sum(r["split"] == "test" for r in recs)   # the held-out video only
    out = _mvp("steer", "eval", *common, "--split", "test", "--bank", str(tmp_path / "bank.pt"),
               "--eta", "0.5", "--steps", "5", "--top-k", "2", "--max-new-tokens", "24",
               "--out", str(tmp_path / "eval.json"))
    rep = json.loads((tmp_path / "eval.json").read_text())
    assert rep["puzzles"] == sum(r["split"] == "test" for r in recs)
    for term in ("exact", "total"):
        lo, hi = rep[term]["change_ci"]
        assert lo <= rep[term]["change"] <= hi
    print(f"\nVideoLLM (tiny random Qwen2.5-VL), {len(right)}/{len(recs)} puzzles labelled right; held-out "
          f"video: exact {rep['exact']['unsteered']:.3f} -> {rep['exact']['steered']:.3f}, reward "
          f"{rep['total']['unsteered']:.3f} -> {rep['total']['steered']:.3f}, "
          f"{rep['answers_changed']}/{rep['puzzles']} answers changed\n{out}")


@pytest.mark.slow
def test_videollm_labels_from_curator_verdicts(solver_run, tiny_model_dir, tmp_path):
    """`mvp steer collect --verdicts`: accepted puzzles good, rejected bad, a tie left out."""
    from db import review
    from db.engine import open_db
    from db.users.accounts import add_user
    from mvp_core.steer.states import load_states
    data, db, recs, _ = solver_run
    ids = [r["id"] for r in recs]
    with open_db(db, data)() as s:
        a, b = (add_user(s, n, "curator", "password-" + n)[0].id for n in ("steer-a", "steer-b"))
        s.commit()
        for pid in ids[:3]:
            review.submit_verdict(s, a, pid, "accept")
        for pid in ids[3:5]:
            review.submit_verdict(s, a, pid, "reject")
        review.submit_verdict(s, a, ids[5], "accept")   # a tie: no label
        review.submit_verdict(s, b, ids[5], "reject")
    out = _mvp("steer", "collect", "--model", str(tiny_model_dir), "--puzzles", str(data / "puzzles.jsonl"),
               "--data", str(data), "--db", db, "--threads", "1", "--batch-size", "4", "--verdicts",
               "--out", str(tmp_path / "states.pt"))
    assert "5 puzzle states from curator verdicts" in out and "accepted (good)" in out
    blob = load_states(tmp_path / "states.pt")
    want = {**{p: False for p in ids[:3]}, **{p: True for p in ids[3:5]}}
    assert dict(zip(blob["items"], blob["bad"].tolist())) == want
    assert blob["classes"] == ["accepted" if not b else "rejected" for b in blob["bad"].tolist()]

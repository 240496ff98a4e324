"""Training reads only the train split of a frozen set (learning is measured on videos it never trained
on): `mvp train --set` and `mvp sft --set` snapshot the train puzzles alone and record the set, its hash
and the splits; scoring such a run's checkpoint on a split it trained on is refused unless --allow-trained-split."""
from __future__ import annotations

import json

import pytest
import yaml
from fixtures_grpo import tiny_overrides
from testkit.cli import run_mvp_here
from testkit.store import accept_and_freeze



@pytest.fixture
def split_set(model_data, tmp_path):
    """A SQLite store holding the model puzzles (2 videos), all accepted, frozen as `s` with one video in
    train and one in test."""
    from db.engine import open_db
    from db.sets.curated import load_set
    data, recs = model_data
    url = f"sqlite:///{tmp_path / 'store.sqlite'}"
    Session = open_db(url, tmp_path)
    accept_and_freeze(Session, recs, "s", {"train": 0.5, "test": 0.5})
    split_of = {}
    with Session() as s:
        for r in load_set(s, "s"):
            split_of[r["id"]] = r["split"]
    assert sorted(set(split_of.values())) == ["test", "train"]
    return url, data, split_of


@pytest.mark.slow
@pytest.mark.parametrize("trainer", ["train", "sft"])
def test_set_runs_keep_only_train_puzzles(trainer, split_set, tiny_model_dir, tmp_path):
    url, data, split_of = split_set
    out = tmp_path / "run"
    settings = tiny_overrides(tiny_model_dir, data, out, max_steps=1, save_steps=1, data_dir=data)
    if trainer == "sft":
        settings = [x for x in settings if not x.startswith(("num_generations", "reward=", "gradient_accumulation"))]
        settings += ["per_device_train_batch_size=1", "freeze_vision=false"]
    res = run_mvp_here(trainer, *settings, "--set", "s", "--db", url, "--data", tmp_path)
    assert res.returncode == 0, res.stdout + res.stderr
    kept = [json.loads(x) for x in (out / "puzzles.jsonl").read_text().splitlines()]
    assert kept and {r["split"] for r in kept} == {"train"}
    assert len(kept) == sum(v == "train" for v in split_of.values())
    conf = yaml.safe_load((out / "config.yaml").read_text())
    assert conf["set_name"] == "s" and conf["set_splits"] == ["train"] and len(conf["set_hash"]) == 64

    # the checkpoint scored on the trained split: refused in one line; on test: allowed to start
    ckpt = out / "checkpoints" / "step_000001"
    for split, flag, refused in (("train", [], True), (None, [], False), ("train", ["--allow-trained-split"], False)):
        argv = ["eval", "--model", ckpt, "--set", "s", "--db", url, "--data", data, "--limit", "1",
                "--max-new-tokens", "2", *(["--split", split] if split else []), *flag]
        res = run_mvp_here(*argv)
        if refused:
            assert res.returncode != 0 and "measures memory, not learning" in res.stderr, res.stderr
            assert "Traceback" not in res.stderr
        else:
            assert res.returncode == 0, res.stderr
            if split is None:                 # the whole set asked: the trained split left out, and said
                assert "outside the trained split train" in res.stderr, res.stderr


@pytest.mark.slow
def test_naming_a_split_trains_on_it_and_says_so(split_set, tiny_model_dir, tmp_path):
    url, data, split_of = split_set
    out = tmp_path / "run"
    res = run_mvp_here("train", *tiny_overrides(tiny_model_dir, data, out, max_steps=1, save_steps=1, data_dir=data),
                       "--set", "s", "--split", "train,test", "--db", url, "--data", tmp_path)
    assert res.returncode == 0, res.stderr
    assert len((out / "puzzles.jsonl").read_text().splitlines()) == len(split_of)
    assert yaml.safe_load((out / "config.yaml").read_text())["set_splits"] == ["train", "test"]
    bad = run_mvp_here("train", *tiny_overrides(tiny_model_dir, data, tmp_path / "r2", max_steps=1, data_dir=data),
                       "--set", "s", "--split", "val", "--db", url, "--data", tmp_path)
    assert bad.returncode != 0 and "no puzzles in split val" in bad.stderr and "Traceback" not in bad.stderr



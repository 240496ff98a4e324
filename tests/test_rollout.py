"""Rollouts with the tiny Qwen2.5-VL on puzzles over real frames: scoring, advantages, resuming,
Parquet, and the database store on SQLite and PostgreSQL."""
from __future__ import annotations

import numpy as np
import pytest
from fixtures_model import dir_loader

from mvp_core.model.rollout import GenConfig, RolloutStats, run_rollouts, summarize, write_parquet

pytestmark = pytest.mark.usefixtures("torch_one_thread")

GEN = GenConfig(num_generations=4, max_new_tokens=12, seed=7)


@pytest.fixture(scope="module")
def rollout_rows(tiny_policy, model_data):
    model, proc = tiny_policy
    data, recs = model_data
    stats = RolloutStats()
    rows = run_rollouts(model, proc, recs[:2], dir_loader(data), gcfg=GEN, stats=stats, batch_puzzles=2)
    return rows, stats


def test_rows_scores_and_advantages(rollout_rows, model_data):
    rows, stats = rollout_rows
    _, recs = model_data
    assert len(rows) == 8 and stats.answers == 8 and stats.puzzles == 2
    assert {(r["puzzle_id"], r["sample_index"]) for r in rows} == {(p["id"], i) for p in recs[:2] for i in range(4)}
    pools = {p["id"]: {o["label"]: o["kind"] for o in p["options"]} for p in recs}
    for r in rows:
        assert all(0.0 <= r[k] <= 1.0 for k in ("format", "selection", "order", "exact", "total"))
        assert 0 < r["completion_tokens"] <= GEN.max_new_tokens
        assert r["chosen_kinds"] == [pools[r["puzzle_id"]].get(x, "outside") for x in r["chosen_labels"]]
    for pid in {r["puzzle_id"] for r in rows}:
        adv = np.array([r["advantage"] for r in rows if r["puzzle_id"] == pid])
        assert abs(adv.mean()) < 1e-6
    d = stats.as_dict()
    assert d["gen_s"] > 0 and d["score_s"] > 0 and 0 < d["gen_share"] < 1 and d["answers_per_s"] > 0
    s = summarize(rows)
    assert s["answers"] == 8 and s["puzzles"] == 2


def test_same_seed_same_answers_and_resume(tiny_policy, model_data, rollout_rows):
    model, proc = tiny_policy
    data, recs = model_data
    rows, _ = rollout_rows
    again = run_rollouts(model, proc, recs[:2], dir_loader(data), gcfg=GEN, batch_puzzles=2)
    assert [r["completion"] for r in again] == [r["completion"] for r in rows]
    # everything stored for puzzle 0 and samples 0-1 of puzzle 1: only samples 2-3 of puzzle 1 remain
    done = {(recs[0]["id"], i) for i in range(4)} | {(recs[1]["id"], i) for i in range(2)}
    rest = run_rollouts(model, proc, recs[:2], dir_loader(data), gcfg=GEN, done=done)
    assert [(r["puzzle_id"], r["sample_index"]) for r in rest] == [(recs[1]["id"], 2), (recs[1]["id"], 3)]
    full = {(p["id"], i) for p in recs[:2] for i in range(4)}
    assert run_rollouts(model, proc, recs[:2], dir_loader(data), gcfg=GEN, done=full) == []


def test_greedy_is_deterministic(tiny_policy, model_data):
    model, proc = tiny_policy
    data, recs = model_data
    g = GenConfig(num_generations=1, max_new_tokens=8, do_sample=False)
    a = run_rollouts(model, proc, recs[2:4], dir_loader(data), gcfg=g, batch_puzzles=2)
    b = run_rollouts(model, proc, recs[2:4], dir_loader(data), gcfg=g)
    assert [r["completion"] for r in a] == [r["completion"] for r in b]
    assert all(r["advantage"] == 0.0 for r in a)


def test_each_prompt_runs_once_and_draws_what_generate_draws(tiny_policy, model_data):
    """Rollouts prefill each puzzle's prompt once for its G answers (decode.sample_each): the language
    model's prompt forward holds each puzzle's row once, where generate(num_return_sequences=G) holds it
    G times; greedy answers are generate's, and the G sampled answers of a puzzle differ."""
    import torch

    from mvp_core.model.decode import sample_each
    from mvp_core.model.prompt import PromptConfig, build_inputs
    from mvp_core.model.sampler import SamplerSettings, sample
    model, proc = tiny_policy
    data, recs = model_data
    inputs = build_inputs(proc, recs[:2], dir_loader(data), PromptConfig())
    P = inputs["input_ids"].shape[1]
    rows = []          # (rows, tokens) of each language-model forward

    def record(module, args, kwargs):
        rows.append(tuple(kwargs["inputs_embeds"].shape[:2]))
    hook = model.model.language_model.register_forward_pre_hook(record, with_kwargs=True)
    try:
        with torch.inference_mode():
            greedy = SamplerSettings(do_sample=False, max_new_tokens=10)
            assert torch.equal(sample_each(model, inputs, greedy, 1), sample(model, inputs, greedy)[:, P:])
            rows.clear()
            torch.manual_seed(3)
            drawn = sample_each(model, inputs, SamplerSettings(max_new_tokens=10), 4)
            once = max(rows, key=lambda r: r[1])
            rows.clear()
            sample(model, inputs, SamplerSettings(max_new_tokens=10), num_return_sequences=4)
            whole = max(rows, key=lambda r: r[1])
    finally:
        hook.remove()
    assert once == (2, P - 1) and whole == (8, P)
    assert drawn.shape[0] == 8 and all(len({tuple(r) for r in drawn[i:i + 4].tolist()}) > 1 for i in (0, 4))


def test_parquet_merge_keeps_rows_once(tmp_path, rollout_rows):
    import pyarrow.parquet as pq
    rows, _ = rollout_rows
    out = tmp_path / "r" / "rollouts.parquet"
    write_parquet(out, rows[:5])
    merged = write_parquet(out, rows[3:])                   # rows 3, 4 are already there
    assert len(merged) == len(rows)
    t = pq.read_table(out)
    assert t.num_rows == len(rows) and t.schema.field("chosen_labels").type.value_type == "string"
    keys = list(zip(t["puzzle_id"].to_pylist(), t["sample_index"].to_pylist()))
    assert keys == sorted(keys) and len(set(keys)) == len(keys)


def test_store_rollouts_in_both_databases(store_db, tiny_policy):
    """Rollouts land in the database (SQLite and PostgreSQL) and a rerun resumes after them."""
    from sqlalchemy import func, select

    from db.models.runs import Rollout, Run
    from db.runs.rollouts import RolloutStore
    from mvp_core.model.rollout import frame_loader

    model, proc = tiny_policy
    recs = store_db.records[:2]
    g = GenConfig(num_generations=2, max_new_tokens=8)
    store = RolloutStore(store_db.Session, "tiny run #1", model_path="/models/tiny", set_name=None,
                         config={"G": 2})
    assert store.run_id == "tiny-run-1" and store.done_keys() == set()
    rows = run_rollouts(model, proc, recs, frame_loader(store_db.data_dir), gcfg=g, on_batch=store.add)
    assert len(rows) == 4
    assert store.done_keys() == {(r["puzzle_id"], r["sample_index"]) for r in rows}
    assert store.add(rows) == 0                              # idempotent
    store.finish()
    again = RolloutStore(store_db.Session, "tiny run #1")
    assert run_rollouts(model, proc, recs, frame_loader(store_db.data_dir), gcfg=g, done=again.done_keys()) == []
    with store_db.Session() as s:
        assert s.get(Run, "tiny-run-1").status == "running"   # reopened
        assert s.scalar(select(func.count()).select_from(Rollout)) == 4
        r0 = s.scalars(select(Rollout).order_by(Rollout.puzzle_id, Rollout.sample_index)).first()
        first = min(rows, key=lambda r: (r["puzzle_id"], r["sample_index"]))
        assert r0.completion == first["completion"] and r0.chosen_labels == first["chosen_labels"]
        assert r0.total == pytest.approx(first["total"]) and r0.advantage == pytest.approx(first["advantage"])
    # a checkpoint's answers are kept apart from the base model's
    ck = RolloutStore(store_db.Session, "tiny run #1", checkpoint_step=10, model_path="/models/tiny/step10")
    assert ck.checkpoint_id is not None and ck.done_keys() == set()
    assert ck.add(rows[:1]) == 1 and len(ck.rows()) == 1 and len(again.rows()) == 4

"""Training's small fixes and its single definitions:

- held-out evaluation during training reseeded torch's global RNG (run_rollouts seeds per puzzle), so
  the steps after an evaluation sampled other completions than without it; now forked (heldout.py);
- `max_completion_length` defaults to 256 where TRL's is 512: the reason is in the field's doc;
- non-default top_p / top_k make the sampler differ from the policy: one warning line in the run log
  and `sampler/non_policy` = 1 in every step's metrics (0 otherwise);
- the sampler's ranges are defined once (sampler.RANGES): the training configs and the sampler
  settings of `mvp rollout` / `mvp eval` accept and refuse the same values;
- one scored-completion schema (mvp_core/model/rollout.py) for rollouts and training completions."""
from __future__ import annotations

import pyarrow.parquet as pq
import pytest
from fixtures_grpo import tiny_overrides

from mvp_core.errors import UserError
from mvp_core.model.rollout import SCORED_COMPLETION, TRAINING_COLUMNS, arrow_schema, write_parquet
from mvp_core.model.sampler import RANGES, SamplerSettings
from mvp_core.train.config import GRPOConfig, load_config
from mvp_core.train.loop import train
from mvp_core.train.rundir import read_metrics


@pytest.fixture(autouse=True)
def _threads(torch_one_thread):
    yield


def _cfg(model_dir, data, out, **extra):
    base = dict(max_steps=3, save_steps=3, max_completion_length=6, num_generations=2,
                per_device_train_batch_size=2, gradient_accumulation_steps=1, reward="mvp")
    return load_config(None, tiny_overrides(model_dir, data, out, **{**base, **extra}))


@pytest.fixture(scope="module")
def plain_run(tiny_model_dir, model_data, tmp_path_factory):
    import torch
    torch.set_num_threads(1)
    out = tmp_path_factory.mktemp("smalls") / "plain"
    train(_cfg(tiny_model_dir, model_data[0], out))
    return out


def _completions(run, step):
    return pq.read_table(run / "completions" / f"step_{step:06d}.parquet").to_pylist()


def test_training_after_an_eval_is_training_without_it(plain_run, tiny_model_dir, model_data, tmp_path):
    data = model_data[0]
    out = tmp_path / "with_eval"
    train(_cfg(tiny_model_dir, data, out, eval_puzzles=data / "puzzles.jsonl", eval_limit=2, eval_steps=1))
    with_eval, without = read_metrics(out), read_metrics(plain_run)
    assert all("eval_reward" in m for m in with_eval)                  # it did evaluate after every step
    for step in (2, 3):                                                  # the steps after an evaluation
        assert [r["completion"] for r in _completions(out, step)] == \
               [r["completion"] for r in _completions(plain_run, step)]
        for key in ("reward", "loss", "grad_norm", "kl", "entropy"):
            assert with_eval[step - 1][key] == without[step - 1][key], (step, key)


def test_max_completion_length_documents_why_not_trls_512():
    doc = GRPOConfig.field_docs()["max_completion_length"]
    assert GRPOConfig().max_completion_length == 256 and "TRL's 512" in doc and "on purpose" in doc


def test_non_policy_sampler_is_flagged(plain_run, tiny_model_dir, model_data, tmp_path):
    assert all(m["sampler/non_policy"] == 0.0 for m in read_metrics(plain_run))
    assert "warning" not in (plain_run / "stdout.log").read_text()
    out = tmp_path / "top_p"
    train(_cfg(tiny_model_dir, model_data[0], out, max_steps=1, save_steps=1, top_p=0.9, top_k=5))
    assert [m["sampler/non_policy"] for m in read_metrics(out)] == [1.0]
    warnings = [x for x in (out / "stdout.log").read_text().splitlines() if "warning" in x]
    assert len(warnings) == 1 and "top_p=0.9, top_k=5 make the sampler differ from the policy" in warnings[0]


@pytest.mark.parametrize("name", sorted(RANGES))
def test_sampler_ranges_are_defined_once(name):
    """At, inside and just outside each bound: the training config and the sampler agree."""
    r = RANGES[name]
    eps = 1 if name == "top_k" else 1e-9
    for value in (r.lo, r.hi, r.lo - eps, r.hi + eps, (r.lo + r.hi) / 2):
        value = int(value) if name == "top_k" else value
        try:
            SamplerSettings(**{name: value})
            sampler_ok = True
        except UserError:
            sampler_ok = False
        try:
            load_config(None, [f"{name}={value!r}"])
            config_ok = True
        except UserError:
            config_ok = False
        assert sampler_ok == config_ok == r.contains(value), (name, value, sampler_ok, config_ok)


def test_one_scored_completion_schema(plain_run, tmp_path):
    """A training run's completions and `mvp rollout`'s parquet: the same columns and types."""
    training = pq.read_table(sorted((plain_run / "completions").glob("step_*.parquet"))[0])
    assert training.schema.equals(arrow_schema(SCORED_COMPLETION + TRAINING_COLUMNS))
    rows = training.to_pylist()
    assert {r["puzzle_id"] for r in rows} and all(r["video_id"] for r in rows)
    # the training rows are rollout rows: written by rollout's own writer as they are
    write_parquet(tmp_path / "rollouts.parquet", rows)
    assert pq.read_table(tmp_path / "rollouts.parquet").schema.equals(arrow_schema())

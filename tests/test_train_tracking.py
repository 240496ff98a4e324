"""Tracking (mvp_core/train/tracking.py): `report_to=tensorboard` writes each step's
metrics under TRL's names, and the run's config and set hash, into RUN/tensorboard/, read back here
with TensorBoard's own EventAccumulator and compared with the run's metrics.jsonl. A tracker that is
not installed, or not known, is one line before anything is written. Before: no `report_to` at all."""
from __future__ import annotations

import importlib.util
import shutil

import pytest
from fixtures_grpo import tiny_overrides

from mvp_core.errors import UserError
from mvp_core.train.config import load_config
from mvp_core.train.loop import train
from mvp_core.train.rundir import read_metrics
from mvp_core.train.sft import train_sft
from mvp_core.train.sft_config import load_sft_config
from mvp_core.train.tracking import tracked


@pytest.fixture(autouse=True)
def _threads(torch_one_thread):
    yield


def _events(run):
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator
    acc = EventAccumulator(str(run / "tensorboard"), size_guidance={"scalars": 0, "tensors": 0})
    acc.Reload()
    return acc


def _check_scalars_equal_metrics(run):
    acc = _events(run)
    rows = read_metrics(run)
    tags = set(acc.Tags()["scalars"])
    want = {row["step"]: tracked(row) for row in rows}
    assert tags == {tag for values in want.values() for tag in values}
    for tag in tags:
        got = {e.step: e.value for e in acc.Scalars(tag)}
        assert got == {step: pytest.approx(v[tag], rel=1e-6, abs=1e-30) for step, v in want.items() if tag in v}, tag
    return acc, tags


def _text(acc, tag: str) -> str:
    (event,) = acc.Tensors(f"{tag}/text_summary")
    return event.tensor_proto.string_val[0].decode()


def test_grpo_metrics_reach_tensorboard_under_trl_names(tiny_model_dir, model_data, tmp_path):
    data = model_data[0]
    eval_file = data / "puzzles.jsonl"
    cfg = load_config(None, tiny_overrides(tiny_model_dir, data, tmp_path / "run", max_steps=2, save_steps=1,
                                           num_generations=2, per_device_train_batch_size=2,
                                           gradient_accumulation_steps=1, max_completion_length=4,
                                           eval_puzzles=eval_file, eval_limit=2, report_to="tensorboard"))
    train(cfg)
    acc, tags = _check_scalars_equal_metrics(tmp_path / "run")
    for name in ("reward", "reward_std", "kl", "loss", "grad_norm", "learning_rate", "entropy",
                 "completions/mean_length", "clip_ratio/region_mean", "rewards/exact/mean", "frac_reward_zero_std"):
        assert f"train/{name}" in tags, name
    assert "eval/reward" in tags and "train/lr" not in tags
    sha = (tmp_path / "run" / "config.yaml").read_text().split("sha256: ")[1].split()[0]
    assert _text(acc, "set_hash") == sha
    config = _text(acc, "config")
    assert "report_to:" in config and sha in config and "kind: grpo" in config
    # a resume from step 1 redoes step 2: TensorBoard then holds step 2 once, as metrics.jsonl does
    shutil.rmtree(tmp_path / "run" / "checkpoints" / "step_000002")
    assert train(cfg, resume=True)["step"] == 2
    acc, _ = _check_scalars_equal_metrics(tmp_path / "run")
    assert [e.step for e in acc.Scalars("train/reward")] == [1, 2]


def test_sft_metrics_reach_tensorboard(tiny_model_dir, model_data, tmp_path):
    data = model_data[0]
    cfg = load_sft_config(None, [f"model={tiny_model_dir}", f"puzzles={data / 'puzzles.jsonl'}",
                                 f"output_dir={tmp_path / 'run'}", "per_device_train_batch_size=2",
                                 "max_pixels=3136", "max_steps=2", "save_steps=2", "report_to=tensorboard"])
    train_sft(cfg)
    _, tags = _check_scalars_equal_metrics(tmp_path / "run")
    assert {"train/loss", "train/mean_token_accuracy", "train/learning_rate", "train/grad_norm"} <= tags
    # the Train page's past-runs table gives the command that opens this run in TensorBoard
    import yaml

    from app.web.pages.train.runs import tracking_cell
    run = {"dir": str(tmp_path / "run"), "config": yaml.safe_load((tmp_path / "run" / "config.yaml").read_text())}
    assert tracking_cell(run) == f'<code class="mvp-tb">tensorboard --logdir {tmp_path / "run" / "tensorboard"}</code>'
    assert tracking_cell({"dir": "", "config": {"report_to": ["none"]}}) == "-"
    assert tracking_cell({"dir": "", "config": {"report_to": "mlflow,wandb"}}) == "mlflow<br>wandb"


@pytest.mark.parametrize("tracker", ["mlflow", "wandb", "trackio"])
def test_a_tracker_not_installed_is_one_line_and_writes_nothing(tracker, tiny_model_dir, model_data, tmp_path):
    assert importlib.util.find_spec(tracker) is None        # the [tracking] extra is not in the test env
    data = model_data[0]
    cfg = load_config(None, tiny_overrides(tiny_model_dir, data, tmp_path / "run", report_to=f"tensorboard,{tracker}"))
    with pytest.raises(UserError) as e:
        train(cfg)
    assert str(e.value) == (f"report_to={tracker}: {tracker} is not installed (pip install {tracker}, "
                            f"or the [tracking] extra)")
    assert not (tmp_path / "run").exists()


def test_unknown_tracker_is_a_config_error():
    for load in (load_config, load_sft_config):
        with pytest.raises(UserError) as e:
            load(None, ["report_to=tensorbord"])
        assert "report_to: unknown tracker 'tensorbord' (choose from none, tensorboard, trackio, mlflow, wandb)" \
            in str(e.value) and "\n" not in str(e.value)
    assert load_config(None, []).report_to == ["none"]

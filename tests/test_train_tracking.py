"""Tracking (mvp_core/train/tracking.py): `report_to=tensorboard` writes each step's metrics under TRL's
names (the rest under the studio's `mvp/` prefix), and the run's config and set hash, into RUN/tensorboard/,
read back here with TensorBoard's own EventAccumulator and compared with the run's metrics.jsonl and with
the scalar names TRL's own GRPOTrainer writes (tests/trl_tensorboard_run.py). A tracker that is not
installed, or not known, is one line before anything is written."""
from __future__ import annotations

import importlib.util
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from fixtures_grpo import tiny_overrides

from mvp_core.errors import UserError
from mvp_core.train.config import load_config
from mvp_core.train.loop import train
from mvp_core.train.rundir import read_metrics
from mvp_core.train.sft import train_sft
from mvp_core.train.sft_config import load_sft_config
from mvp_core.train.tracking import NOT_COMPUTED, STUDIO_PREFIX, tracked

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(autouse=True)
def _threads(torch_one_thread):
    yield


def _events(run):
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator
    acc = EventAccumulator(str(run / "tensorboard"), size_guidance={"scalars": 0, "tensors": 0})
    acc.Reload()
    return acc


def _check_scalars_equal_metrics(run, reward=None):
    acc = _events(run)
    rows = read_metrics(run)
    tags = set(acc.Tags()["scalars"])
    want = {row["step"]: tracked(row, reward) for row in rows}
    assert tags == {tag for values in want.values() for tag in values}
    for tag in tags:
        got = {e.step: e.value for e in acc.Scalars(tag)}
        assert got == {step: pytest.approx(v[tag], rel=1e-6, abs=1e-30) for step, v in want.items() if tag in v}, tag
    return acc, tags


def _text(acc, tag: str) -> str:
    (event,) = acc.Tensors(f"{tag}/text_summary")
    return event.tensor_proto.string_val[0].decode()


def _trl_tags(puzzles: Path, model_dir: Path, out: Path) -> set[str]:
    res = subprocess.run([sys.executable, str(ROOT / "tests" / "trl_tensorboard_run.py"), str(puzzles),
                          str(model_dir), str(out)], capture_output=True, text=True, timeout=600)
    assert res.returncode == 0, res.stderr[-3000:]
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator
    acc = EventAccumulator(str(out / "tb"), size_guidance={"scalars": 0})
    acc.Reload()
    return set(acc.Tags()["scalars"])


@pytest.mark.slow
def test_grpo_metrics_reach_tensorboard_under_trl_names(tiny_model_dir, model_data, tmp_path):
    data = model_data[0]
    eval_file = data / "puzzles.jsonl"
    cfg = load_config(None, tiny_overrides(tiny_model_dir, data, tmp_path / "run", max_steps=2, save_steps=1,
                                           num_generations=2, per_device_train_batch_size=2,
                                           gradient_accumulation_steps=1, max_completion_length=4,
                                           eval_puzzles=eval_file, eval_limit=2, report_to="tensorboard",
                                           reward="mvp"))
    train(cfg)
    acc, tags = _check_scalars_equal_metrics(tmp_path / "run", "mvp")
    # every scalar TRL's GRPOTrainer logs is under the same name here, unless the studio does not compute it
    trl = _trl_tags(eval_file, tiny_model_dir, tmp_path / "trl")
    assert "train/rewards/mvp_reward/mean" in trl and "train/step_time" in trl and "train/num_tokens" in trl
    missing = {t for t in trl - tags if t.removeprefix("train/") not in NOT_COMPUTED}
    assert not missing, f"TRL logs these and the studio run does not: {sorted(missing)}"
    # and every other scalar of the studio is under its own prefix, never a name TRL uses for something else
    own = {t for t in tags - trl if not t.startswith((f"train/{STUDIO_PREFIX}", f"eval/{STUDIO_PREFIX}"))}
    assert own == {"eval/reward"}, own        # TRL's evaluation name; this TRL run has no evaluation
    assert "train/lr" not in tags and "train/step_s" not in tags and "train/mvp/reward/exact" in tags
    sha = (tmp_path / "run" / "config.yaml").read_text().split("sha256: ")[1].split()[0]
    assert _text(acc, "set_hash") == sha
    config = _text(acc, "config")
    assert "report_to:" in config and sha in config and "kind: grpo" in config
    # a resume from step 1 redoes step 2: TensorBoard then holds step 2 once, as metrics.jsonl does
    first = read_metrics(tmp_path / "run")[0]["num_tokens"]
    shutil.rmtree(tmp_path / "run" / "checkpoints" / "step_000002")
    assert train(cfg, resume=True)["step"] == 2
    acc, _ = _check_scalars_equal_metrics(tmp_path / "run", "mvp")
    assert [e.step for e in acc.Scalars("train/reward")] == [1, 2]
    # TRL's num_tokens counts on from the resumed step (prompt + completion tokens since step 1)
    rows = read_metrics(tmp_path / "run")
    assert rows[0]["num_tokens"] == first == rows[0]["step_tokens"]
    assert rows[1]["num_tokens"] == first + rows[1]["step_tokens"]


def test_sft_metrics_reach_tensorboard(tiny_model_dir, model_data, tmp_path):
    data = model_data[0]
    cfg = load_sft_config(None, [f"model={tiny_model_dir}", f"puzzles={data / 'puzzles.jsonl'}",
                                 f"output_dir={tmp_path / 'run'}", "per_device_train_batch_size=2",
                                 "max_pixels=3136", "max_steps=2", "save_steps=2", "report_to=tensorboard"])
    train_sft(cfg)
    _, tags = _check_scalars_equal_metrics(tmp_path / "run")
    assert {"train/loss", "train/mean_token_accuracy", "train/learning_rate", "train/grad_norm"} <= tags
    assert "train/mvp/step_s" in tags and "train/completions/mean_length" not in tags   # GRPO's names only
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

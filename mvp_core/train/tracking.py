"""Experiment trackers a run reports to beside metrics.jsonl (`report_to`: tensorboard, trackio, mlflow,
wandb): each step's metrics under TRL's names, and the run's config and curated-set hash once.

metrics.jsonl stays the record the studio reads; a tracker gets a copy in which every scalar TRL's
trainers also log carries TRL's name (`lr` -> `learning_rate`, `step_s` -> `step_time`, the reward as
`rewards/<function>/mean`, ...; docs/grpo.md, "Trackers") and every other one the studio's own prefix
`mvp/`, all prefixed as the Hugging Face Trainer's callbacks do (`train/...`, held-out `eval/...`), so a
studio run and a TRL run sit side by side in one dashboard. Each tracker is imported only when named, and
one that is not installed is refused in one line before the run starts (mlflow, wandb and trackio are the
optional [tracking] extra; TensorBoard is written through torch's SummaryWriter)."""
from __future__ import annotations

import importlib
import importlib.util
import math
import os
from pathlib import Path

from mvp_core.errors import UserError

TRACKERS = ("none", "tensorboard", "trackio", "mlflow", "wandb")
STUDIO_PREFIX = "mvp/"

# What transformers.Trainer logs for every TRL trainer: metrics.jsonl name -> TRL's name.
_TRAINER_NAMES = {"loss": ("loss",), "grad_norm": ("grad_norm",), "lr": ("learning_rate",), "epoch": ("epoch",)}
# SFTTrainer's own (mvp_core/train/sft.py's metrics).
SFT_NAMES = {**_TRAINER_NAMES, "token_accuracy": ("mean_token_accuracy",)}
# GRPOTrainer's own (runlog.step_metrics): "{func}" is the reward function's name (reward_function_name).
# reward_std is the batch std (TRL's); the studio's per-group mean std stays under mvp/reward_std.
GRPO_NAMES = {
    **_TRAINER_NAMES,
    "reward": ("reward", "rewards/{func}/mean"),          # one reward function: its mean is the reward's
    "reward_std_batch": ("reward_std", "rewards/{func}/std"),
    "frac_reward_zero_std": ("frac_reward_zero_std",),
    "kl": ("kl",),
    "entropy": ("entropy",),
    "clip_ratio/low": ("clip_ratio/low_mean",),
    "clip_ratio/high": ("clip_ratio/high_mean",),
    "clip_ratio/region": ("clip_ratio/region_mean",),
    "completion_length": ("completions/mean_length",),
    "completion_length/min": ("completions/min_length",),
    "completion_length/max": ("completions/max_length",),
    "clipped_ratio": ("completions/clipped_ratio",),
    "terminated_length/mean": ("completions/mean_terminated_length",),
    "terminated_length/min": ("completions/min_terminated_length",),
    "terminated_length/max": ("completions/max_terminated_length",),
    "num_tokens": ("num_tokens",),
    "step_s": ("step_time",),
}
# TRL scalars the studio does not compute, and why (tests/test_train_tracking.py compares with a TRL run):
# the clip ratios' min/max over processes (the studio reduces sums over processes, one ratio per step),
# and transformers.Trainer's end-of-training summary (one value per run, not per step).
NOT_COMPUTED = ("clip_ratio/low_min", "clip_ratio/high_max", "train_runtime", "train_samples_per_second",
                "train_steps_per_second", "total_flos", "train_loss")
# The name TRL logs the project's reward under (the function of mvp_core/export/logged_reward.py); the
# smoke-test rewards (`reward: format | mentions_label`) keep their config names.
REWARD_FUNCTIONS = {"mvp": "mvp_reward"}


def reward_function_name(reward: str) -> str:
    return REWARD_FUNCTIONS.get(reward, reward)


NOT_TRACKED = ("step", "time")      # the step is the x axis; the wall clock is the tracker's own


def check_names(value) -> list[str]:
    """`report_to` as a list of known tracker names ("a,b" from key=value accepted); one line if not."""
    names = [x.strip() for x in value.split(",")] if isinstance(value, str) else list(value)
    unknown = [n for n in names if n not in TRACKERS]
    if unknown:
        raise UserError(f"report_to: unknown tracker {', '.join(map(repr, unknown))} "
                        f"(choose from {', '.join(TRACKERS)})")
    return [n for n in names if n != "none"] or ["none"]


def check(names: list[str]) -> None:
    """Every named tracker is importable; else one line saying how to install it."""
    for name in names:
        if name != "none" and importlib.util.find_spec(name) is None:
            extra = "the test extra" if name == "tensorboard" else "the [tracking] extra"
            raise UserError(f"report_to={name}: {name} is not installed (pip install {name}, or {extra})")


def tracked(metrics: dict, reward: str | None = None) -> dict[str, float]:
    """A step's metrics as a tracker receives them: TRL's names where TRL logs the same scalar (GRPO's
    table for a run with `reward`, SFT's without), the studio's `mvp/` prefix otherwise, `train/` or
    `eval/` in front; finite numbers only (a null grad norm is left out, never drawn as 0)."""
    names = SFT_NAMES if reward is None else GRPO_NAMES
    func = reward_function_name(reward) if reward is not None else ""
    out = {}
    for key, value in metrics.items():
        if key in NOT_TRACKED or isinstance(value, bool) or not isinstance(value, (int, float)):
            continue
        if not math.isfinite(value):
            continue
        if key.startswith("eval_"):       # TRL's evaluation logs eval_reward; the rest are the studio's
            name = key.removeprefix("eval_")
            out[f"eval/{name}" if name == "reward" else f"eval/{STUDIO_PREFIX}{name}"] = float(value)
            continue
        for name in names.get(key, (STUDIO_PREFIX + key,)):
            out[f"train/{name.format(func=func)}"] = float(value)
    return out


class Trackers:
    """The open trackers of one run (rank 0): `log(step, metrics)` each step, `close()` at the end."""

    def __init__(self, sinks: list, reward: str | None = None):
        self.sinks, self.reward = sinks, reward

    def log(self, step: int, metrics: dict) -> None:
        values = tracked(metrics, self.reward)
        for sink in self.sinks:
            sink.log(step, values)

    def close(self) -> None:
        for sink in self.sinks:
            sink.close()


def open_trackers(cfg, run_dir, config_yaml: str, set_hash: str, start_step: int = 0) -> Trackers | None:
    """Open the trackers `cfg.report_to` names, each given the config and the set hash; None for none.
    On a resume from `start_step`, TensorBoard drops what it holds after that step (the steps are redone,
    as metrics.jsonl is truncated).
    `set_hash` is the hash of the puzzles file trained on (config.yaml's run_info.set.sha256); the
    curated set's content hash, when the run came from `--set`, is in the config as set_hash."""
    names = [n for n in cfg.report_to if n != "none"]
    if not names:
        return None
    check(names)
    path = Path(run_dir.path)
    return Trackers([_OPEN[n](path, cfg, config_yaml, set_hash, start_step) for n in names],
                    getattr(cfg, "reward", None))    # SFT's config has no reward: SFT's names


class _TensorBoard:
    def __init__(self, path: Path, cfg, config_yaml: str, set_hash: str, start_step: int):
        from torch.utils.tensorboard import SummaryWriter
        self.writer = SummaryWriter(log_dir=str(path / "tensorboard"), purge_step=start_step + 1 if start_step else None)
        self.writer.add_text("config", "```yaml\n" + config_yaml + "\n```")
        self.writer.add_text("set_hash", set_hash)

    def log(self, step: int, values: dict) -> None:
        for tag, value in values.items():
            self.writer.add_scalar(tag, value, step)
        self.writer.flush()

    def close(self) -> None:
        self.writer.close()


class _WandbLike:
    """wandb and trackio share the call shape: init(project, name, config), log(dict, step), finish()."""

    def __init__(self, module: str, path: Path, cfg, config_yaml: str, set_hash: str, start_step: int):
        self.lib = importlib.import_module(module)     # by name: an optional extra, not a runtime import
        project = os.environ.get("MVP_TRACKING_PROJECT", "mvp-studio")
        config = dict(cfg.to_dict(), set_hash_sha256=set_hash)
        kwargs = {"dir": str(path)} if module == "wandb" else {}
        self.run = self.lib.init(project=project, name=path.name, config=config, **kwargs)

    def log(self, step: int, values: dict) -> None:
        self.lib.log(values, step=step)

    def close(self) -> None:
        self.lib.finish()


class _MLflow:
    def __init__(self, path: Path, cfg, config_yaml: str, set_hash: str, start_step: int):
        self.lib = importlib.import_module("mlflow")   # by name: an optional extra, not a runtime import
        self.lib.start_run(run_name=path.name)
        self.lib.set_tag("set_hash", set_hash)
        self.lib.log_text(config_yaml, "config.yaml")

    def log(self, step: int, values: dict) -> None:
        self.lib.log_metrics(values, step=step)

    def close(self) -> None:
        self.lib.end_run()


_OPEN = {
    "tensorboard": _TensorBoard,
    "wandb": lambda *a: _WandbLike("wandb", *a),
    "trackio": lambda *a: _WandbLike("trackio", *a),
    "mlflow": _MLflow,
}

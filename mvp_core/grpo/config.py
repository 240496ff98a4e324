"""`GRPOConfig`: every setting of a training run, with its documentation next to it.

Names, defaults and meanings follow TRL's `GRPOConfig` where TRL has the setting (docs/ARCHITECTURE.md, "Run directory"), so a
run here and a TRL run compare. A config comes from a YAML file plus `key=value` overrides; every
value is checked against the field's type and allowed values, and a bad one is a one-line
`UserError` naming the key."""
from __future__ import annotations

import dataclasses
import difflib
import typing
from dataclasses import dataclass, field
from pathlib import Path

from mvp_core.errors import UserError

LOSS_TYPES = ("dapo", "grpo", "dr_grpo", "bnpo")
SCALE_REWARDS = ("group", "batch", "none")
LR_SCHEDULES = ("constant", "linear", "cosine")
BF16_MODES = ("auto", "true", "false")
REWARDS = ("mvp", "format", "mentions_label")


def _doc(text: str, **kw):
    """A dataclass field whose documentation travels with it (shown by `mvp train --help-config`
    and in the training page)."""
    return field(metadata={"doc": text}, **kw)


@dataclass
class GRPOConfig:
    # ---- what to train, on what, where to write ------------------------------------------------
    model: str = _doc("Local path of the policy checkpoint (a Qwen2.5-VL directory).", default="")
    puzzles: str = _doc("Curated-set snapshot: a puzzles.jsonl file (one puzzle record per line).", default="")
    data_dir: str = _doc("Directory the puzzles' frame uris are relative to; empty = the puzzles "
                         "file's directory.", default="")
    set_name: str = _doc("Name of the curated set (recorded in config.yaml); empty = the puzzles "
                         "file's parent directory name.", default="")
    output_dir: str = _doc("Run directory: config.yaml, metrics.jsonl, completions/, checkpoints/, "
                           "stdout.log.", default="runs/grpo")
    seed: int = _doc("Seed of the data order, sampling and initialisation of new weights.", default=0)

    # ---- length of the run and checkpoints -----------------------------------------------------
    max_steps: int = _doc("Optimizer steps to run.", default=100)
    save_steps: int = _doc("Save a checkpoint every this many steps (and always at the end).", default=50)
    save_total_limit: int = _doc("Keep only the newest this many checkpoints; 0 = keep all.", default=2)
    save_completions: bool = _doc("Write every sampled completion with its reward terms and "
                                  "advantage to completions/*.parquet.", default=True)

    # ---- GRPO (TRL names) ----------------------------------------------------------------------
    num_generations: int = _doc("G: completions sampled per puzzle; advantages are computed within "
                                "these groups.", default=8)
    per_device_train_batch_size: int = _doc(
        "Completions per forward/backward micro-batch on each process (TRL name).", default=8)
    gradient_accumulation_steps: int = _doc(
        "Micro-batches per optimizer step on each process (TRL name). One step samples "
        "per_device_train_batch_size x gradient_accumulation_steps completions per process "
        "(a multiple of num_generations: groups stay whole on a process).", default=1)
    logprob_batch_size: int = _doc("Completions per no-grad forward when computing the reference "
                                   "model's log-probs (memory only; does not change the maths).", default=8)
    beta: float = _doc("KL weight to a frozen reference model (k3 estimator); 0 = no reference "
                       "model is loaded (TRL default).", default=0.0)
    epsilon: float = _doc("Lower clip range of the probability ratio: ratio >= 1 - epsilon.", default=0.2)
    epsilon_high: float = _doc("Upper clip range (ratio <= 1 + epsilon_high); negative = same as "
                               "epsilon. DAPO recommends 0.28.", default=-1.0)
    loss_type: str = _doc("How per-token losses are averaged: dapo (over all tokens of the step), "
                          "grpo (per sequence, then over sequences), dr_grpo (sum / (B x "
                          "max_completion_length)), bnpo (over the micro-batch's tokens).", default="dapo")
    scale_rewards: str = _doc("Divide centred rewards by the std of the group, of the whole batch, "
                              "or not at all (none, Dr. GRPO).", default="group")
    reward: str = _doc("Reward function: mvp (the fine-grained reward of mvp_core.reward), format (its "
                       "format term only) or mentions_label (1 if the completion names a pool "
                       "label: a signal a random policy earns, for smoke tests).", default="mvp")
    reward_weights: dict = _doc("Weights of the mvp reward's terms (format, selection, order, exact).",
                                default_factory=lambda: {"format": 0.1, "selection": 0.3, "order": 0.3,
                                                         "exact": 0.3})

    # ---- sampling ------------------------------------------------------------------------------
    max_completion_length: int = _doc("Most new tokens per completion.", default=256)
    temperature: float = _doc("Sampling temperature; log-probs use the same temperature (as TRL).",
                              default=1.0)
    top_p: float = _doc("Nucleus sampling mass.", default=1.0)
    video_mode: bool = _doc("Show the context frames as one video instead of separate images "
                            "(mvp_core.model.prompt).", default=False)
    max_pixels: int = _doc("Resize bound per image / video frame in pixels; 0 = the processor's "
                           "default. Visual tokens per image ~ pixels / 784.", default=0)

    # ---- optimisation --------------------------------------------------------------------------
    learning_rate: float = _doc("Peak AdamW learning rate (TRL default 1e-6).", default=1e-6)
    lr_scheduler_type: str = _doc("Learning-rate schedule after warm-up: constant, linear (to 0) "
                                  "or cosine (to 0).", default="linear")
    warmup_steps: int = _doc("Steps of linear warm-up from 0 to learning_rate.", default=0)
    weight_decay: float = _doc("AdamW weight decay.", default=0.0)
    adam_beta1: float = _doc("AdamW beta1.", default=0.9)
    adam_beta2: float = _doc("AdamW beta2.", default=0.999)
    adam_epsilon: float = _doc("AdamW epsilon.", default=1e-8)
    max_grad_norm: float = _doc("Clip the global gradient norm to this; 0 = no clipping.", default=1.0)

    # ---- memory and precision ------------------------------------------------------------------
    bf16: str = _doc("bf16 autocast for forwards: auto (where the accelerator supports it), true, "
                     "false. Weights and optimizer state stay float32.", default="auto")
    gradient_checkpointing: bool = _doc("Recompute activations in the backward pass (less memory, "
                                        "~30% more compute).", default=False)
    freeze_vision: bool = _doc("Keep the vision tower's weights fixed (train the language model only).",
                               default=True)
    lora: bool = _doc("Train LoRA adapters (peft) instead of the full weights.", default=False)
    lora_r: int = _doc("LoRA rank.", default=16)
    lora_alpha: int = _doc("LoRA alpha (scale = alpha / r).", default=32)
    lora_dropout: float = _doc("LoRA dropout.", default=0.0)
    lora_target_modules: list = _doc("Module names LoRA adapts (language model attention and MLP).",
                                     default_factory=lambda: ["q_proj", "k_proj", "v_proj", "o_proj",
                                                              "gate_proj", "up_proj", "down_proj"])
    fsdp: bool = _doc("Under torchrun, shard parameters, gradients and optimizer state across "
                      "processes (FSDP2) instead of replicating them (DDP).", default=False)
    attn_implementation: str = _doc("Attention kernel: sdpa, eager or flash_attention_2.", default="sdpa")

    # ---- derived helpers -----------------------------------------------------------------------
    @property
    def eps_high(self) -> float:
        return self.epsilon if self.epsilon_high < 0 else self.epsilon_high

    @property
    def completions_per_process(self) -> int:
        return self.per_device_train_batch_size * self.gradient_accumulation_steps

    def to_dict(self) -> dict:
        return dataclasses.asdict(self)

    def validate(self) -> "GRPOConfig":
        """Check values that types alone do not catch; raise a one-line UserError."""
        choices = {"loss_type": LOSS_TYPES, "scale_rewards": SCALE_REWARDS,
                   "lr_scheduler_type": LR_SCHEDULES, "bf16": BF16_MODES, "reward": REWARDS}
        for key, allowed in choices.items():
            if getattr(self, key) not in allowed:
                raise UserError(f"{key} must be one of {', '.join(allowed)}, not {getattr(self, key)!r}")
        positive = ("max_steps", "save_steps", "num_generations", "per_device_train_batch_size",
                    "gradient_accumulation_steps", "logprob_batch_size", "max_completion_length", "lora_r")
        for key in positive:
            if getattr(self, key) < 1:
                raise UserError(f"{key} must be >= 1, got {getattr(self, key)}")
        for key in ("beta", "epsilon", "learning_rate", "warmup_steps", "weight_decay", "max_grad_norm",
                    "save_total_limit", "max_pixels"):
            if getattr(self, key) < 0:
                raise UserError(f"{key} must be >= 0, got {getattr(self, key)}")
        if self.temperature <= 0:
            raise UserError(f"temperature must be > 0, got {self.temperature}")
        if not 0 < self.top_p <= 1:
            raise UserError(f"top_p must be in (0, 1], got {self.top_p}")
        if self.num_generations < 2:
            raise UserError("num_generations must be >= 2 (advantages compare completions within a group)")
        if self.completions_per_process % self.num_generations:
            raise UserError(
                f"per_device_train_batch_size x gradient_accumulation_steps "
                f"({self.completions_per_process}) must be a multiple of num_generations ({self.num_generations})")
        unknown = set(self.reward_weights) - {"format", "selection", "order", "exact"}
        if unknown:
            raise UserError(f"reward_weights has unknown terms: {', '.join(sorted(unknown))}")
        return self


def field_docs() -> dict[str, str]:
    """{name: documentation} for every field, in declaration order."""
    return {f.name: f.metadata.get("doc", "") for f in dataclasses.fields(GRPOConfig)}


_HINTS = None


def _hints() -> dict:
    global _HINTS
    if _HINTS is None:
        _HINTS = typing.get_type_hints(GRPOConfig)
    return _HINTS


def _coerce(key: str, value):
    """Convert a YAML/CLI value to the field's type, or raise a one-line UserError."""
    t = _hints()[key]
    if t is bool:
        if isinstance(value, bool):
            return value
        if isinstance(value, str) and value.lower() in ("true", "false", "yes", "no", "1", "0"):
            return value.lower() in ("true", "yes", "1")
        raise UserError(f"{key} must be true or false, got {value!r}")
    if t in (int, float) and isinstance(value, str):
        try:   # YAML 1.1 reads "1e-6" (no dot) as a string
            value = float(value)
        except ValueError:
            pass
    if t is int:
        if isinstance(value, bool) or not isinstance(value, (int, float)) or int(value) != value:
            raise UserError(f"{key} must be an integer, got {value!r}")
        return int(value)
    if t is float:
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise UserError(f"{key} must be a number, got {value!r}")
        return float(value)
    if t is str:
        if isinstance(value, bool):   # YAML reads `bf16: true` as a bool
            return "true" if value else "false"
        if value is None:
            return ""
        if not isinstance(value, (str, int, float)):
            raise UserError(f"{key} must be a string, got {value!r}")
        return str(value)
    if t is list:
        if isinstance(value, str):
            value = [v.strip() for v in value.split(",") if v.strip()]
        if not isinstance(value, list):
            raise UserError(f"{key} must be a list, got {value!r}")
        return value
    if t is dict:
        if not isinstance(value, dict):
            raise UserError(f"{key} must be a mapping, got {value!r}")
        return {str(k): float(v) for k, v in value.items()} if key == "reward_weights" else value
    raise AssertionError(f"unhandled type {t} for {key}")


def _unknown(key: str) -> UserError:
    close = difflib.get_close_matches(key, list(_hints()), n=1)
    hint = f" (did you mean {close[0]!r}?)" if close else ""
    return UserError(f"unknown config key {key!r}{hint}")


def from_dict(values: dict, base: GRPOConfig | None = None) -> GRPOConfig:
    cfg = dataclasses.replace(base) if base else GRPOConfig()
    for key, value in values.items():
        if key not in _hints():
            raise _unknown(key)
        if key == "reward_weights" and isinstance(value, dict):
            merged = dict(cfg.reward_weights)
            merged.update(_coerce(key, value))
            value = merged
        else:
            value = _coerce(key, value)
        setattr(cfg, key, value)
    return cfg


def parse_overrides(items: list[str]) -> dict:
    """['lr=1e-5', 'reward_weights.format=1'] -> {...}; values are parsed as YAML scalars."""
    import yaml
    out: dict = {}
    for item in items:
        if "=" not in item:
            raise UserError(f"override {item!r} is not key=value")
        key, raw = item.split("=", 1)
        key = key.strip()
        try:
            value = yaml.safe_load(raw) if raw.strip() else ""
        except yaml.YAMLError:
            value = raw
        if "." in key:   # one level of nesting: reward_weights.format=1
            head, sub = key.split(".", 1)
            out.setdefault(head, {})[sub] = value
        else:
            out[key] = value
    return out


def load_config(path: str | Path | None = None, overrides: list[str] | None = None) -> GRPOConfig:
    """Defaults <- YAML file <- `key=value` overrides, validated."""
    import yaml
    values: dict = {}
    if path:
        p = Path(path)
        if not p.is_file():
            raise UserError(f"config file {p} does not exist")
        try:
            loaded = yaml.safe_load(p.read_text())
        except yaml.YAMLError as e:
            raise UserError(f"{p} is not valid YAML ({str(e).splitlines()[0]})") from None
        if loaded is None:
            loaded = {}
        if not isinstance(loaded, dict):
            raise UserError(f"{p} must hold a mapping of config keys, not a {type(loaded).__name__}")
        loaded.pop("run_info", None)   # what a run recorded about itself in config.yaml
        values.update(loaded)
    cfg = from_dict(values)
    cfg = from_dict(parse_overrides(overrides or []), base=cfg)
    return cfg.validate()


def to_yaml(cfg: GRPOConfig, extra: dict | None = None) -> str:
    import yaml
    d = cfg.to_dict()
    if extra:
        d = {**extra, **d}
    return yaml.safe_dump(d, sort_keys=False)


def documented_yaml(cfg: GRPOConfig | None = None) -> str:
    """The config as YAML with each key's documentation as a comment above it (for the UI and
    `mvp train --print-config`)."""
    import yaml
    cfg = cfg or GRPOConfig()
    lines = []
    for name, doc in field_docs().items():
        lines.append(f"# {doc}")
        # flow style keeps lists and mappings on one line; drop the end-of-document marker
        value = yaml.safe_dump(getattr(cfg, name), default_flow_style=True).strip()
        lines.append(f"{name}: {value.removesuffix('...').strip()}")
    return "\n".join(lines) + "\n"

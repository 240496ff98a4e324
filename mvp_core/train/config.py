"""`GRPOConfig`: every setting of a training run, with its documentation and range next to it.

Names, defaults and meanings follow TRL's `GRPOConfig` where TRL has the setting (docs/ARCHITECTURE.md,
"Run directory"), so a run here and a TRL run compare. A config comes from a YAML file plus
`key=value` overrides (mvp_core/config.py: the loader, the base model and the one-line errors);
every value is checked against the field's type, range and allowed values.

Upper bounds are sanity caps, far above any run this project makes (a 7B run uses G=8, 768 tokens,
lr 1e-6): they turn a typo (`max_steps=1e9`, `learning_rate=1`) into an error instead of a run
that diverges or never ends. They are printed with each key by `mvp train --print-config`."""
from __future__ import annotations

from pathlib import Path
from typing import Annotated, Literal

from pydantic import BeforeValidator, Field, field_validator, model_validator

from mvp_core.config import DocumentedConfig
from mvp_core.errors import UserError
from mvp_core.model.sampler import RANGES
from mvp_core.reward import DEFAULT_WEIGHTS, check_weights
from mvp_core.train.tracking import check_names

# ---- fields both trainers' configs record (SFTConfig imports these) ------------------------------


def set_hash_field():
    return Field("", description="Content hash of the curated set the puzzles were snapshot from "
                                 "(`--set`; recorded so a run names exactly what it trained on).")


def set_splits_field():
    return Field(default_factory=list, description=(
        "The set's splits the run trains on (`--set` takes only `train` unless `--split` names others); "
        "`mvp eval`/`mvp rollout` refuse a split listed here without --allow-trained-split."))


# report_to: tracker names, checked (and "a,b" from key=value split) by tracking.check_names
ReportTo = Annotated[list[str], BeforeValidator(check_names)]


def report_to_field():
    return Field(default_factory=lambda: ["none"], description=(
        "Trackers that receive the run's metrics (TRL's names), its config and the set hash, beside "
        "metrics.jsonl: any of none, tensorboard (RUN/tensorboard/), trackio, mlflow, wandb; each must be "
        "installed (mlflow, wandb, trackio: the [tracking] extra; mvp_core/train/tracking.py)."))


LOSS_TYPES = ("dapo", "grpo", "dr_grpo", "bnpo")
SCALE_REWARDS = ("group", "batch", "none")
LR_SCHEDULES = ("constant", "linear", "cosine")
BF16_MODES = ("auto", "true", "false")
REWARDS = ("mvp", "format", "mentions_label")

MAX_STEPS = 1_000_000
MAX_BATCH = 4096


class GRPOConfig(DocumentedConfig):
    # ---- what to train, on what, where to write ------------------------------------------------
    model: str = Field("", description="Local path of the policy checkpoint (a Qwen2.5-VL directory).")
    puzzles: str = Field("", description="Curated-set snapshot: a puzzles.jsonl file (one puzzle record per line).")
    data_dir: str = Field("", description="Directory the puzzles' frame uris are relative to; empty = the "
                                          "puzzles file's directory.")
    set_name: str = Field("", description="Name of the curated set (recorded in config.yaml); empty = the "
                                          "puzzles file's parent directory name.")
    set_hash: str = set_hash_field()
    set_splits: list[str] = set_splits_field()
    output_dir: str = Field("runs/grpo", description="Run directory: config.yaml, metrics.jsonl, completions/, "
                                                     "checkpoints/, stdout.log.")
    seed: int = Field(0, ge=0, le=2**32 - 1, description="Seed of the data order, sampling and initialisation "
                                                          "of new weights.")

    # ---- length of the run and checkpoints -----------------------------------------------------
    max_steps: int = Field(100, ge=1, le=MAX_STEPS, description="Optimizer steps to run.")
    save_steps: int = Field(50, ge=1, le=MAX_STEPS, description="Save a checkpoint every this many steps "
                                                                "(and always at the end).")
    save_total_limit: int = Field(2, ge=0, le=10_000, description="Keep only the newest this many "
                                                                  "checkpoints; 0 = keep all.")
    save_completions: bool = Field(True, description="Write every sampled completion with its reward terms and "
                                                     "advantage to completions/*.parquet.")
    report_to: ReportTo = report_to_field()

    # ---- GRPO (TRL names) ----------------------------------------------------------------------
    num_generations: int = Field(8, ge=2, le=256, description=(
        "G: completions sampled per puzzle; advantages are computed within these groups (so at least 2)."))
    per_device_train_batch_size: int = Field(8, ge=1, le=MAX_BATCH, description=(
        "Completions per forward/backward micro-batch on each process (TRL name)."))
    gradient_accumulation_steps: int = Field(1, ge=1, le=MAX_BATCH, description=(
        "Micro-batches per optimizer step on each process (TRL name). One step samples "
        "per_device_train_batch_size x gradient_accumulation_steps completions per process "
        "(a multiple of num_generations: groups stay whole on a process)."))
    logprob_batch_size: int = Field(8, ge=1, le=MAX_BATCH, description=(
        "Completions per no-grad forward when computing the reference model's log-probs (memory only; "
        "does not change the maths)."))
    beta: float = Field(0.0, ge=0.0, le=10.0, description=(
        "KL weight to a frozen reference model (k3 estimator); 0 = no reference model is loaded (TRL default)."))
    epsilon: float = Field(0.2, ge=0.0, le=1.0, description="Lower clip range of the probability ratio: "
                                                            "ratio >= 1 - epsilon.")
    epsilon_high: float = Field(-1.0, ge=-1.0, le=10.0, description=(
        "Upper clip range (ratio <= 1 + epsilon_high); negative = same as epsilon. DAPO recommends 0.28."))
    loss_type: Literal[LOSS_TYPES] = Field("dapo", description=(
        "How per-token losses are averaged: dapo (over all tokens of the step), grpo (per sequence, then "
        "over sequences), dr_grpo (sum / (B x max_completion_length)), bnpo (over the micro-batch's tokens)."))
    scale_rewards: Literal[SCALE_REWARDS] = Field("group", description=(
        "Divide centred rewards by the std of the group, of the whole batch, or not at all (none, Dr. GRPO)."))
    reward: Literal[REWARDS] = Field("mvp", description=(
        "Reward function: mvp (the fine-grained reward of mvp_core.reward), format (its format term only) "
        "or mentions_label (1 if the completion names a pool label: a signal a random policy earns, for "
        "smoke tests)."))
    reward_weights: dict[str, float] = Field(
        default_factory=lambda: dict(DEFAULT_WEIGHTS),
        description="Weights of the mvp reward's terms (format, selection, order, exact); each in [0, 100], not "
                    "all 0. The reward is their weighted mean (mvp_core/reward.py), so it stays in [0, 1] and "
                    "an exact answer scores highest whenever exact > 0.")

    # ---- sampling ------------------------------------------------------------------------------
    max_completion_length: int = Field(256, ge=1, le=32_768, description=(
        "Most new tokens per completion. 256, not TRL's 512 on purpose: an answer here is a short think "
        "block and a list of labels (well under 256 tokens in the project's runs), and a sampled "
        "completion that never ends costs generation time up to this cap; raise it for long reasoning."))
    temperature: float = Field(1.0, **RANGES["temperature"].field_bounds(), description=(
        "Sampling temperature; log-probs use the same temperature (as TRL). At least 1e-3: logits / a "
        "vanishing temperature overflow to inf and sampling fails."))
    top_p: float = Field(1.0, **RANGES["top_p"].field_bounds(), description=(
        "Nucleus sampling mass (1 = off). Below 1 the sampler differs from the policy the log-probs "
        "describe: the run log warns and metrics carry sampler/non_policy = 1."))
    top_k: int = Field(0, **RANGES["top_k"].field_bounds(), description=(
        "Sample only from the k most likely tokens; 0 = off. Anything but 0 makes the sampler differ "
        "from the distribution the log-probs describe (mvp_core/model/sampler.py): the run log warns "
        "and metrics carry sampler/non_policy = 1."))
    min_p: float = Field(0.0, **RANGES["min_p"].field_bounds(), description=(
        "Drop tokens below min_p x the top probability; 0 = off (else flagged as top_k is)."))
    repetition_penalty: float = Field(1.0, **RANGES["repetition_penalty"].field_bounds(), description=(
        "Penalise tokens already present (1 = off). Set here, never inherited from a checkpoint's "
        "generation_config (Qwen-VL Instruct ships 1.05)."))
    video_mode: bool = Field(False, description="Show the context frames as one video instead of separate "
                                                "images (mvp_core.model.prompt).")
    max_pixels: int = Field(0, ge=0, le=100_000_000, description=(
        "Resize bound per image / video frame in pixels; 0 = the processor's default. Visual tokens per "
        "image ~ pixels / 784."))

    # ---- held-out evaluation (mvp_core/train/heldout.py) ----------------------------------------
    eval_puzzles: str = Field("", description="Held-out puzzles.jsonl (videos not trained on); empty = none.")
    eval_data_dir: str = Field("", description="Frame directory of eval_puzzles; empty = its file's directory.")
    eval_split: str = Field("", description="Use only eval_puzzles records of this split (e.g. val); empty = all.")
    eval_steps: int = Field(0, ge=0, le=MAX_STEPS, description=(
        "Answer the held-out puzzles greedily every this many steps (and at the end) and log eval_reward, "
        "eval_exact, eval_format; 0 = only at the end."))
    eval_limit: int = Field(0, ge=0, le=1_000_000, description="Evaluate at most this many held-out puzzles; 0 = all.")

    # ---- optimisation --------------------------------------------------------------------------
    learning_rate: float = Field(1e-6, ge=0.0, le=1.0, description="Peak AdamW learning rate (TRL default 1e-6).")
    lr_scheduler_type: Literal[LR_SCHEDULES] = Field("linear", description=(
        "Learning-rate schedule after warm-up (transformers.get_scheduler): constant, linear (to 0) or "
        "cosine (to 0)."))
    warmup_steps: int = Field(0, ge=0, le=MAX_STEPS, description="Steps of linear warm-up from 0 to "
                                                                 "learning_rate (as transformers).")
    weight_decay: float = Field(0.0, ge=0.0, le=1.0, description="AdamW weight decay.")
    adam_beta1: float = Field(0.9, ge=0.0, lt=1.0, description="AdamW beta1.")
    adam_beta2: float = Field(0.999, ge=0.0, lt=1.0, description="AdamW beta2.")
    adam_epsilon: float = Field(1e-8, gt=0.0, le=1.0, description="AdamW epsilon.")
    max_grad_norm: float = Field(1.0, ge=0.0, le=1e6, description="Clip the global gradient norm to this; "
                                                                  "0 = no clipping.")

    # ---- memory and precision ------------------------------------------------------------------
    bf16: Literal[BF16_MODES] = Field("auto", description=(
        "bf16 autocast for forwards: auto (where the accelerator supports it), true, false. Weights and "
        "optimizer state stay float32."))
    gradient_checkpointing: bool = Field(False, description="Recompute activations in the backward pass (less "
                                                            "memory, ~30% more compute).")
    freeze_vision: bool = Field(True, description="Keep the vision tower's weights fixed (train the language "
                                                  "model only).")
    share_prompt: bool = Field(True, description=(
        "Run each puzzle's prompt once for its G completions in the rollout's prefill and the log-prob "
        "forward (its keys/values repeated): the same log-probs and gradient at a fraction of the cost; a "
        "micro-batch that would save too few prompt tokens runs whole (docs/grpo.md, \"When sharing pays\"); "
        "off = every sequence whole (docs/grpo.md, \"One prompt forward per group\"). Off by itself under "
        "gradient_checkpointing."))
    lora: bool = Field(False, description="Train LoRA adapters (peft) instead of the full weights.")
    lora_r: int = Field(16, ge=1, le=1024, description="LoRA rank.")
    lora_alpha: int = Field(32, ge=1, le=65_536, description="LoRA alpha (scale = alpha / r).")
    lora_dropout: float = Field(0.0, ge=0.0, lt=1.0, description="LoRA dropout.")
    lora_target_modules: list[str] = Field(
        default_factory=lambda: ["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"],
        description="Module names LoRA adapts (language model attention and MLP).")
    fsdp: bool = Field(False, description="Under torchrun, shard parameters, gradients and optimizer state "
                                          "across processes (FSDP2) instead of replicating them (DDP).")
    attn_implementation: Literal["sdpa", "eager", "flash_attention_2", "flash_attention_3"] = Field(
        "sdpa", description="Attention kernel (transformers' attn_implementation).")

    # ---- rules across fields -------------------------------------------------------------------
    @field_validator("reward_weights")
    @classmethod
    def _known_terms(cls, v: dict) -> dict:
        try:
            return check_weights(v)
        except ValueError as e:
            raise UserError(str(e)) from None

    @model_validator(mode="after")
    def _whole_groups(self):
        if self.completions_per_process % self.num_generations:
            raise UserError(
                f"per_device_train_batch_size x gradient_accumulation_steps "
                f"({self.completions_per_process}) must be a multiple of num_generations ({self.num_generations})")
        return self

    # ---- derived helpers -----------------------------------------------------------------------
    @property
    def eps_high(self) -> float:
        return self.epsilon if self.epsilon_high < 0 else self.epsilon_high

    @property
    def completions_per_process(self) -> int:
        return self.per_device_train_batch_size * self.gradient_accumulation_steps


def field_docs() -> dict[str, str]:
    """{name: documentation with range} for every field, in declaration order."""
    return GRPOConfig.field_docs()


def load_config(path: str | Path | None = None, overrides: list[str] | None = None) -> GRPOConfig:
    """Defaults <- YAML file <- `key=value` overrides, validated."""
    return GRPOConfig.load(path, overrides)


def documented_yaml(cfg: GRPOConfig | None = None) -> str:
    """The config as YAML with each key's documentation as a comment above it (for the UI and
    `mvp train --print-config`)."""
    return GRPOConfig.documented_yaml(cfg)


__all__ = [
    "BF16_MODES",
    "LOSS_TYPES",
    "LR_SCHEDULES",
    "REWARDS",
    "SCALE_REWARDS",
    "GRPOConfig",
    "ReportTo",
    "documented_yaml",
    "field_docs",
    "load_config",
]

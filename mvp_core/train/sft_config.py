"""`SFTConfig`: every setting of a supervised warm-start run (`mvp sft`), a pydantic model with a
description and range per field. Names and meanings follow the GRPO config (and TRL's
SFTConfig) wherever the setting is shared, so an SFT run and the GRPO run started from it read
the same; the shared model-setup code (model_setup.py) takes either. The base (mvp_core/config.py)
gives it the one YAML loader, key=value overrides and the one-line errors with "did you mean"."""
from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import Field

from mvp_core.config import DocumentedConfig
from mvp_core.train.config import ReportTo, report_to_field, set_hash_field, set_splits_field


class SFTConfig(DocumentedConfig):
    # ---- what to train, on what, where to write ------------------------------------------------
    model: str = Field("", description="Local path of the starting checkpoint (a Qwen2.5-VL directory).")
    puzzles: str = Field("", description="Curated-set snapshot: a puzzles.jsonl file to train on.")
    data_dir: str = Field("", description="Directory the frame uris are relative to; empty = the puzzles file's.")
    set_name: str = Field("", description="Name of the curated set (recorded in config.yaml).")
    set_hash: str = set_hash_field()
    set_splits: list[str] = set_splits_field()
    output_dir: str = Field("runs/sft", description="Run directory (config.yaml, metrics.jsonl, checkpoints/, "
                                                    "stdout.log, status.json).")
    seed: int = Field(0, ge=0, description="Seed of the data order and of new weights (LoRA).")
    target: Literal["empty", "short", "times", "scan"] = Field(
        "empty", description="Completion the model learns: 'empty' = <think></think><answer>labels</answer>; "
                             "'short' = a one-sentence reasoning made from the puzzle in the think block; "
                             "'times' = the time (s) of every shown frame, of the masked frames and of every option, then each masked frame's option, in the think block; "
                             "'scan' = the context frames' times, then per masked frame its time and the options' times "
                             "in label order up to its option (no look-up: the learning test's target).")

    # ---- length of the run and checkpoints -----------------------------------------------------
    max_steps: int = Field(100, ge=1, le=10_000_000, description="Optimizer steps to run.")
    save_steps: int = Field(50, ge=1, description="Save a checkpoint every this many steps (and at the end).")
    save_total_limit: int = Field(2, ge=0, description="Keep only the newest this many checkpoints; 0 = all.")
    report_to: ReportTo = report_to_field()
    per_device_train_batch_size: int = Field(8, ge=1, le=4096, description="Puzzles per forward/backward "
                                                                           "micro-batch (TRL name).")
    gradient_accumulation_steps: int = Field(1, ge=1, le=4096, description="Micro-batches per optimizer step.")

    # ---- held-out evaluation -------------------------------------------------------------------
    eval_puzzles: str = Field("", description="Held-out puzzles.jsonl (videos not trained on); empty = none.")
    eval_data_dir: str = Field("", description="Frame directory of eval_puzzles; empty = its file's directory.")
    eval_split: str = Field("", description="Use only eval_puzzles records of this split (e.g. val); empty = all.")
    eval_steps: int = Field(0, ge=0, description="Evaluate greedy answers on the held-out puzzles every this "
                                                 "many steps (and at the end); 0 = only at the end.")
    eval_limit: int = Field(0, ge=0, description="Evaluate at most this many held-out puzzles; 0 = all.")

    # ---- prompt (kept by `mvp eval --run`) -----------------------------------------------------
    video_mode: bool = Field(False, description="Show the context frames as one video instead of images.")
    max_pixels: int = Field(0, ge=0, description="Resize bound per image in pixels; 0 = the processor's.")
    max_completion_length: int = Field(32, ge=1, le=65536, description="Most new tokens when answering "
                                                                       "held-out puzzles.")

    # ---- optimisation --------------------------------------------------------------------------
    learning_rate: float = Field(1e-5, gt=0, le=1.0, description="Peak AdamW learning rate.")
    lr_scheduler_type: Literal["constant", "linear", "cosine"] = Field("linear", description="Schedule after "
                                                                                            "warm-up.")
    warmup_steps: int = Field(0, ge=0, description="Steps of linear warm-up.")
    weight_decay: float = Field(0.0, ge=0, description="AdamW weight decay.")
    adam_beta1: float = Field(0.9, ge=0, lt=1, description="AdamW beta1.")
    adam_beta2: float = Field(0.999, ge=0, lt=1, description="AdamW beta2.")
    adam_epsilon: float = Field(1e-8, gt=0, description="AdamW epsilon.")
    max_grad_norm: float = Field(1.0, ge=0, description="Clip the global gradient norm; 0 = no clipping.")

    # ---- memory and precision ------------------------------------------------------------------
    bf16: Literal["auto", "true", "false"] = Field("auto", description="bf16 autocast for forwards.")
    gradient_checkpointing: bool = Field(False, description="Recompute activations in the backward pass.")
    freeze_vision: bool = Field(True, description="Keep the vision tower fixed (false to train it too, "
                                                  "as a random-weight tiny model needs).")
    lora: bool = Field(False, description="Train LoRA adapters (peft) instead of the full weights; the run "
                                          "also writes merged/ (full weights) for a GRPO run to start from.")
    lora_r: int = Field(16, ge=1, le=1024, description="LoRA rank.")
    lora_alpha: int = Field(32, ge=1, description="LoRA alpha (scale = alpha / r).")
    lora_dropout: float = Field(0.0, ge=0, lt=1, description="LoRA dropout.")
    lora_target_modules: list[str] = Field(
        default_factory=lambda: ["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"],
        description="Module names LoRA adapts (language model only).")
    attn_implementation: str = Field("sdpa", description="Attention kernel: sdpa, eager or flash_attention_2.")

    # ---- what the shared PuzzleSet / model_setup code reads --------------------------------------
    @property
    def num_generations(self) -> int:
        return 1       # one target per puzzle

    @property
    def completions_per_process(self) -> int:
        return self.per_device_train_batch_size * self.gradient_accumulation_steps


def load_sft_config(path: str | Path | None = None, overrides: list[str] | None = None) -> SFTConfig:
    """Defaults <- YAML file <- `key=value` overrides; a bad key or value is a one-line UserError."""
    return SFTConfig.load(path, overrides)

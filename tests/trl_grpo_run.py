"""TRL's own GRPOTrainer on the trl export, as a user would run it: one step of the tiny Qwen2.5-VL
with the project's reward in TRL's form (mvp_core/export/logged_reward.py `mvp_reward`) and
log_completions=True, so TRL writes OUTPUT/completions/completions_<step>.parquet and a
checkpoint-<step> folder. Run from the export folder (its image paths are ./-relative):

    python tests/trl_grpo_run.py MODEL_DIR OUTPUT_DIR   (cwd: the trl export)

A separate process (tests/test_import_run.py): TRL and accelerate keep process-wide state."""
from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def grpo_train(ds, model_dir: str, out_dir: str, **settings) -> None:
    """TRL's GRPOTrainer on `ds` (rows of the trl export's form) with the project's reward in TRL's form:
    2 prompts x 2 generations of 8 tokens per step on the CPU, one step unless `settings` say otherwise."""
    import torch
    from transformers import AutoModelForImageTextToText, AutoProcessor
    from trl import GRPOConfig, GRPOTrainer

    from mvp_core.export.logged_reward import mvp_reward
    torch.set_num_threads(1)
    torch.manual_seed(0)
    base = dict(per_device_train_batch_size=2, num_generations=2, max_steps=1, max_completion_length=8,
                logging_steps=1, report_to=[], use_cpu=True, bf16=False, learning_rate=1e-5,
                dataloader_num_workers=0, seed=0)
    args = GRPOConfig(output_dir=out_dir, **{**base, **settings})
    trainer = GRPOTrainer(model=AutoModelForImageTextToText.from_pretrained(model_dir), reward_funcs=[mvp_reward],
                          args=args, train_dataset=ds, processing_class=AutoProcessor.from_pretrained(model_dir))
    trainer.train()


def main(model_dir: str, out_dir: str) -> None:
    from datasets import Image, Sequence, load_dataset
    ds = load_dataset("parquet", data_files={"train": "train.parquet"}, cache_dir=str(Path(out_dir) / "hf-cache"))
    ds = ds["train"].cast_column("images", Sequence(Image())).select(range(2))
    grpo_train(ds, model_dir, out_dir, log_completions=True, save_steps=1, save_only_model=True)


if __name__ == "__main__":
    main(*sys.argv[1:3])

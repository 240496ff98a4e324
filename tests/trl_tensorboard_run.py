"""TRL's own GRPOTrainer writing TensorBoard events, so tests/test_train_tracking.py can read the scalar
names TRL logs and compare them with a studio run's: two optimizer steps of the tiny Qwen2.5-VL on the
given puzzles (rows built by the trl export's row builder, mvp_core/export/formats.py), the project's
reward in TRL's form (mvp_core/export/logged_reward.py `mvp_reward`), beta > 0 so the KL is logged.

    python tests/trl_tensorboard_run.py PUZZLES_JSONL MODEL_DIR OUTPUT_DIR   (events in OUTPUT_DIR/tb)

A separate process: TRL and accelerate keep process-wide state."""
from __future__ import annotations

import json
import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def main(puzzles: str, model_dir: str, out_dir: str) -> None:
    os.environ["TENSORBOARD_LOGGING_DIR"] = str(Path(out_dir) / "tb")   # transformers' TensorBoardCallback
    import torch
    from datasets import Dataset, Image, Sequence
    from transformers import AutoModelForImageTextToText, AutoProcessor
    from trl import GRPOConfig, GRPOTrainer

    from mvp_core.export.formats import trl_row
    from mvp_core.export.logged_reward import mvp_reward
    torch.set_num_threads(1)
    torch.manual_seed(0)
    folder = Path(puzzles).parent
    records = [json.loads(x) for x in Path(puzzles).read_text().splitlines() if x.strip()][:2]
    rows = [trl_row(rec, i, "", lambda u: str(folder / u)) for i, rec in enumerate(records)]
    ds = Dataset.from_list(rows).cast_column("images", Sequence(Image()))
    args = GRPOConfig(output_dir=out_dir, per_device_train_batch_size=2, num_generations=2, max_steps=2,
                      max_completion_length=8, logging_steps=1, report_to=["tensorboard"], beta=0.04,
                      save_strategy="no", use_cpu=True, bf16=False, learning_rate=1e-5,
                      dataloader_num_workers=0, seed=0)
    trainer = GRPOTrainer(model=AutoModelForImageTextToText.from_pretrained(model_dir), reward_funcs=[mvp_reward],
                          args=args, train_dataset=ds, processing_class=AutoProcessor.from_pretrained(model_dir))
    trainer.train()


if __name__ == "__main__":
    main(*sys.argv[1:4])

"""TRL's own GRPOTrainer writing TensorBoard events, so tests/test_train_tracking.py can read the scalar
names TRL logs and compare them with a studio run's: two optimizer steps of tests/trl_grpo_run.py's
trainer (the tiny Qwen2.5-VL, the project's reward in TRL's form) on the given puzzles (rows built by
the trl export's row builder, mvp_core/export/formats.py), beta > 0 so the KL is logged.

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
    from datasets import Dataset, Image, Sequence
    from trl_grpo_run import grpo_train      # beside this file: the script folder is on the path

    from mvp_core.export.formats import trl_row
    folder = Path(puzzles).parent
    records = [json.loads(x) for x in Path(puzzles).read_text().splitlines() if x.strip()][:2]
    rows = [trl_row(rec, i, "", lambda u: str(folder / u)) for i, rec in enumerate(records)]
    ds = Dataset.from_list(rows).cast_column("images", Sequence(Image()))
    grpo_train(ds, model_dir, out_dir, max_steps=2, report_to=["tensorboard"], beta=0.04, save_strategy="no")


if __name__ == "__main__":
    main(*sys.argv[1:4])

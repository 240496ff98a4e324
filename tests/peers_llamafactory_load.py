"""Worker run by tests/test_export_peers.py in the LLaMA-Factory overlay (.peers/llamafactory first on
PYTHONPATH, see scripts/setup_peers.sh): LLaMA-Factory 0.9.5's own argument parser, tokenizer loader,
qwen2_vl template and get_dataset read the `mvp export --format llamafactory` folder
(dataset_info.json) for SFT with the tiny Qwen2.5-VL. It only reports what LLaMA-Factory produced
(JSON); the test judges it against the frozen set.

Usage: python peers_llamafactory_load.py EXPORT_DIR MODEL_DIR WORK_DIR RESULT_JSON"""
from __future__ import annotations

import json
import sys
from pathlib import Path


def main(export_dir, model_dir, work_dir, result_json) -> None:
    import llamafactory
    import transformers
    from llamafactory.data import get_dataset, get_template_and_fix_tokenizer
    from llamafactory.extras.constants import IGNORE_INDEX
    from llamafactory.hparams import get_train_args
    from llamafactory.model import load_tokenizer

    info = json.loads((Path(export_dir) / "dataset_info.json").read_text())
    splits = {}
    for name, spec in info.items():
        model_args, data_args, training_args, _, _ = get_train_args({
            "model_name_or_path": model_dir, "stage": "sft", "do_train": True, "finetuning_type": "full",
            "dataset": name, "dataset_dir": export_dir, "template": "qwen2_vl", "cutoff_len": 4096,
            "output_dir": str(Path(work_dir) / "out"), "overwrite_cache": True, "report_to": "none"})
        tok_module = load_tokenizer(model_args)
        tok = tok_module["tokenizer"]
        template = get_template_and_fix_tokenizer(tok, data_args)
        ds = get_dataset(template, model_args, data_args, training_args, stage="sft", **tok_module)["train_dataset"]
        vs = tok.convert_tokens_to_ids("<|vision_start|>")
        rows = []
        for row in ds:
            labels = [t for t in row["labels"] if t != IGNORE_INDEX]
            rows.append({"image_paths": list(row["images"] or []), "n_videos": len(row.get("videos") or []),
                         "vision_starts": row["input_ids"].count(vs),
                         "label_text": tok.decode(labels, skip_special_tokens=True)})
        splits[name] = {"file_rows": len(json.loads((Path(export_dir) / spec["file_name"]).read_text())),
                        "rows": rows}
    Path(result_json).write_text(json.dumps({
        "versions": {"llamafactory": llamafactory.__version__, "transformers": transformers.__version__,
                     "llamafactory_file": llamafactory.__file__}, "splits": splits}))


if __name__ == "__main__":
    main(*[str(Path(a).resolve()) for a in sys.argv[1:5]])

"""The dataset card (README.md) every export carries: YAML front matter the Hugging Face Hub and
`datasets.load_dataset(DIR)` read (which files are which split, the features, the license and task),
then the set's name, content hash and how it was made (docs/store.md, "Export")."""
from __future__ import annotations

import yaml

TASK = "video-text-to-text"     # the Hub's task category for video in, text out


def card(*, name: str, fmt: str, content_hash: str, data_files: dict[str, str | list[str]],
         features: list | None, counts: dict[str, dict[str, int]], made: dict, license: str = "other") -> str:
    """`data_files`: split -> path(s) under the export folder (None of them: a folder `datasets` is
    not meant to load, such as the jsonl snapshot); `features`: the `datasets` YAML feature list of
    every split's rows; `counts`: {split: {puzzles, videos}}; `made`: the set's freezing parameters."""
    meta: dict = {"pretty_name": f"MVP set {name}", "license": license, "task_categories": [TASK],
                  "tags": ["masked-video-prediction", "video", "multiple-choice"]}
    if data_files:
        meta["configs"] = [{"config_name": "default",
                            "data_files": [{"split": k, "path": v} for k, v in data_files.items()]}]
    if features:
        meta["dataset_info"] = {"features": features}
    meta["mvp"] = {"set": name, "content_hash": content_hash, "format": fmt, "splits": counts, "made": made}
    front = yaml.safe_dump(meta, sort_keys=False, allow_unicode=True)
    rows = "\n".join(f"| {k} | {v['puzzles']} | {v['videos']} |" for k, v in counts.items())
    return (f"---\n{front}---\n# MVP set `{name}` ({fmt} export)\n\n"
            f"Masked Video Prediction puzzles: a few frames of a video are masked, and the task is to pick the "
            f"options that fill the gap, in order. Content hash `{content_hash}` (sha256 of the set's "
            f"canonical records). Splits are by video: no video has puzzles in two splits.\n\n"
            f"| split | puzzles | videos |\n|---|---|---|\n{rows}\n\n"
            f"How it was made: `mvp sets freeze` took the puzzles curators accepted (front matter `mvp.made`: "
            f"min_distractors, n_excluded, the split fractions and seed, the puzzle parameters) and "
            f"`mvp export --format {fmt}` wrote this folder. License: `{license}`; the source videos' own "
            f"terms apply to the frames.\n")

"""The video-r1 export read the way Video-R1's own code reads it (tulerfeng/Video-R1 at commit
59d65c347e44efa71be27abf9d89b4a2bb7d1c05, src/r1-v/src/open_r1/grpo.py and trainer/grpo_trainer.py;
Video-R1 is on no registry, so its calls are made here, none of its code is in the project):
- its dataset load: `DatasetDict({"train": Dataset.from_json(dataset_name)})`, trained whole, so each
  split is a file of its own and the train file holds only train puzzles;
- its conversation: one `{"type": data_type}` part then the question text (one visual per sample);
- its image path: `os.getcwd() + "/Video-R1-data" + path[1:]` (a string starting with "./");
- its reward call: `reward_func(prompts=..., completions=[[{"role": "assistant", "content": c}]],
  **every other column repeated per generation)`, here with the project's TRL-form reward
  (mvp_core/export/logged_reward.py mvp_reward) registered as a reward function: the exported
  solution scores 1.0, a reversed or wrong answer less; and its format pattern
  `<think>.*?</think>\\s*<answer>.*?</answer>` holds for the exported process + solution.
The one visual is the puzzle's storyboard: the context frames in order with the gap as flat grey
tiles, the options labelled below; the tiny Qwen2.5-VL processor gives it one image's tokens."""
from __future__ import annotations

import json
import os
import re

import numpy as np
import pytest
from PIL import Image

from mvp_core.export.storyboard import GAP_FILL, TILE_W, layout
from test_export_formats import SPLITS, _frozen


def _tile(board: Image.Image, box) -> np.ndarray:
    return np.asarray(board.crop(box), dtype=np.float32)


@pytest.mark.parametrize("store_db", ["sqlite"], indirect=True)
def test_video_r1_reads_one_storyboard_per_puzzle_one_file_per_split(store_db, tmp_path, monkeypatch):
    from datasets import Dataset, DatasetDict

    from mvp_core.export.logged_reward import mvp_reward
    from mvp_core.model.tiny import build_processor, build_tokenizer
    from mvp_core.reward import render_answer
    out, recs, h = _frozen(store_db, tmp_path, "video-r1")
    assert sorted(p.name for p in out.glob("*.json")) == sorted(f"{SPLITS[r['split']]}.json" for r in
                                                                   {r["split"]: r for r in recs.values()}.values())
    work = tmp_path / "run"                 # Video-R1 runs from a folder holding Video-R1-data/
    work.mkdir()
    (work / "Video-R1-data").symlink_to(out, target_is_directory=True)
    monkeypatch.chdir(work)
    proc = build_processor(build_tokenizer())
    seen = []
    for f in sorted(out.glob("*.json")):
        dataset = DatasetDict({"train": Dataset.from_json(str(f), cache_dir=str(tmp_path / "hf-cache"))})
        train = dataset["train"]
        assert {SPLITS[recs[x]["split"]] for x in train["problem_id"]} == {f.stem}   # only its own split
        for ex in train:
            rec = recs[ex["problem_id"]]
            seen.append(rec["id"])
            assert isinstance(ex["path"], str) and ex["data_type"] == "image"
            image_path = os.getcwd() + "/Video-R1-data" + ex["path"][1:]
            prompt = [{"role": "user", "content": [{"type": ex["data_type"]},
                                                   {"type": "text", "text": ex["problem"]}]}]
            board = Image.open(image_path).convert("RGB")
            text = proc.apply_chat_template(prompt, tokenize=False, add_generation_prompt=True)
            assert text.count("<|vision_start|>") == 1
            assert proc(text=[text], images=[board], return_tensors="pt")["image_grid_thw"].shape[0] == 1
            _check_storyboard(board, rec, store_db.data_dir)

            wrong = list(reversed(rec["answer"])) if len(rec["answer"]) > 1 else \
                [next(o["label"] for o in rec["options"] if o["label"] not in rec["answer"])]
            completions = [ex["process"] + ex["solution"], render_answer(wrong, "x")]
            assert re.fullmatch(r"<think>.*?</think>\s*<answer>.*?</answer>", completions[0], re.DOTALL)
            kwargs = {k: [v] * len(completions) for k, v in ex.items() if k not in ("prompt", "completion")}
            scores = mvp_reward(prompts=[prompt] * len(completions),
                                completions=[[{"role": "assistant", "content": c}] for c in completions], **kwargs)
            assert scores[0] == 1.0 and scores[1] < 1.0
    assert sorted(seen) == sorted(recs)


def _check_storyboard(board: Image.Image, rec: dict, data_dir) -> None:
    """The context tiles are the context frames in order, the gap tiles are flat grey (no masked
    frame drawn), the option tiles the options in label order."""
    with Image.open(data_dir / rec["frames"][0]["uri"]) as im:
        tile_h = round(TILE_W * im.height / im.width)
    size, tiles = layout(rec, tile_h)
    assert board.size == size
    masked = {f["uri"] for f in rec["frames"][rec["mask"]["start"]:][:rec["mask"]["length"]]}
    assert [t.kind for t in tiles].count("gap") == rec["mask"]["length"]
    assert [t.label for t in tiles if t.kind == "option"] == [o["label"] for o in rec["options"]]
    for t in tiles:
        px = _tile(board, t.box)
        if t.kind == "gap":
            assert np.abs(px - np.array(GAP_FILL, dtype=np.float32)).mean() < 4      # JPEG noise only
            continue
        assert t.kind == "option" or t.uri not in masked     # an option may be a target frame; context never
        with Image.open(data_dir / t.uri) as im:
            own = np.asarray(im.convert("RGB").resize(px.shape[1::-1]), dtype=np.float32)
        assert np.abs(px - own).mean() < 8

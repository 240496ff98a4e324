"""The easyr1 export and the project's reward as EasyR1's own code uses them (hiyouga/EasyR1 at commit
b44b311b669bf1fd1aa2fc36f2251482ba33cb16: verl/utils/dataset.py RLHFDataset, verl/workers/reward/
config.py and function.py AutoRewardManager). EasyR1 is on no registry, so its calls are made here
(none of its code is in the project):
- its data path `DIR@split`: `load_dataset(<extension of os.listdir(DIR)[0]>, data_dir=DIR, split=split)`,
  then `example["ground_truth"] = example.pop(answer_key)`;
- its reward loader: `reward_function="<file>:<name>"` split at the last ":", the file executed as
  module "custom_reward_fn" (registered in sys.modules first), REWARD_TYPE read (default "batch"),
  the function wrapped in partial(**reward_function_kwargs);
- its batch call and return handling: a list of {response (decoded without special tokens),
  response_length, ground_truth} in, a list of score dicts out; each score's "overall" goes into the
  reward tensor at the response's last token and every key of it into the metrics lists."""
from __future__ import annotations

import importlib.util
import os
import sys
from collections import defaultdict
from functools import partial
from pathlib import Path

import pytest

from test_export_formats import SPLITS, _frozen

REWARD_FN = Path(__file__).resolve().parents[1] / "mvp_core" / "export" / "reward_fn.py"


def easyr1_reward_fn(reward_function: str, kwargs: dict | None = None):
    path, name = reward_function.rsplit(":", maxsplit=1)
    spec = importlib.util.spec_from_file_location("custom_reward_fn", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules["custom_reward_fn"] = module
    try:
        spec.loader.exec_module(module)
    finally:
        del sys.modules["custom_reward_fn"]
    return partial(getattr(module, name), **(kwargs or {})), getattr(module, "REWARD_TYPE", "batch")


def easyr1_split(data_dir: Path, split: str, answer_key: str, cache: Path):
    from datasets import load_dataset
    file_type = os.path.splitext(os.listdir(data_dir)[0])[-1][1:].replace("jsonl", "json")
    ds = load_dataset(file_type, data_dir=str(data_dir), split=split, cache_dir=str(cache))
    rows = []
    for ex in ds:
        ex["ground_truth"] = ex.pop(answer_key)
        rows.append(ex)
    return rows


def compute_reward_batch(reward_fn, tok, rows: list[dict], responses: list[str]):
    """EasyR1's batch manager on decoded responses: (reward tensor, metrics)."""
    import torch
    ids = [tok(r, add_special_tokens=False)["input_ids"] for r in responses]
    width = max(map(len, ids))
    inputs = [{"response": tok.decode(i, skip_special_tokens=True), "response_length": len(i),
               "ground_truth": row["ground_truth"]} for i, row in zip(ids, rows)]
    scores = reward_fn(inputs)
    reward_tensor = torch.zeros(len(ids), width, dtype=torch.float32)
    metrics = defaultdict(list)
    for i, score in enumerate(scores):
        reward_tensor[i, len(ids[i]) - 1] = score["overall"]
        for key, value in score.items():
            metrics[key].append(value)
    return reward_tensor, metrics, ids


@pytest.mark.parametrize("store_db", ["sqlite"], indirect=True)
def test_easyr1_reward_manager_scores_the_export(store_db, tmp_path):
    from mvp_core.model.tiny import build_tokenizer
    from mvp_core.reward import render_answer
    out, recs, _ = _frozen(store_db, tmp_path, "easyr1")
    tok = build_tokenizer()
    reward_fn, reward_type = easyr1_reward_fn(f"{REWARD_FN}:compute_score_batch")
    assert reward_type == "batch"
    n = 0
    for split in sorted({SPLITS[r["split"]] for r in recs.values()}):
        rows = easyr1_split(out / "data", split, "ground_truth", tmp_path / "hf-cache")
        batch, responses = [], []
        for row in rows:
            rec = recs[row["puzzle_id"]]
            assert row["split"] == split
            wrong = list(reversed(rec["answer"])) if len(rec["answer"]) > 1 else \
                [next(o["label"] for o in rec["options"] if o["label"] not in rec["answer"])]
            for labels in (rec["answer"], wrong):
                batch.append(row)
                responses.append(render_answer(labels, "the motion continues"))
        reward, metrics, ids = compute_reward_batch(reward_fn, tok, batch, responses)
        overall = [float(reward[i, len(x) - 1]) for i, x in enumerate(ids)]
        assert overall == pytest.approx(metrics["overall"])          # the tensor is float32
        assert overall[0::2] == [1.0] * len(rows) and all(w < 1.0 for w in overall[1::2])
        assert metrics["accuracy"][0::2] == [1.0] * len(rows)
        assert set(metrics) >= {"overall", "format", "accuracy"}
        assert all(isinstance(v, float) for vs in metrics.values() for v in vs)
        n += len(rows)
    assert n == len(recs)


@pytest.mark.parametrize("store_db", ["sqlite"], indirect=True)
def test_easyr1_default_answer_key_gives_the_plain_answer(store_db, tmp_path):
    """With EasyR1's default answer_key the ground truth is the answer text inside the exported
    solution's <answer> tag (what its stock exact-match rewards compare); the project's reward,
    which also needs the label pool, says in one line which key to set."""
    from mvp_core.export.formats import solution
    out, recs, _ = _frozen(store_db, tmp_path, "easyr1")
    rows = easyr1_split(out / "data", "train", "answer", tmp_path / "hf-cache")
    assert rows
    for row in rows:
        sol = solution(recs[row["puzzle_id"]])
        assert row["ground_truth"] == sol.split("<answer>")[1].split("</answer>")[0].strip()
    reward_fn, _ = easyr1_reward_fn(f"{REWARD_FN}:compute_score_batch")
    with pytest.raises(ValueError, match=r"not the export's JSON \{answer, pool\}.*data.answer_key=ground_truth"):
        reward_fn([{"response": "x", "response_length": 1, "ground_truth": rows[0]["ground_truth"]}])

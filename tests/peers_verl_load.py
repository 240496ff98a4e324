"""Worker run by tests/test_export_peers.py in the verl overlay (.peers/verl first on PYTHONPATH, see
scripts/setup_peers.sh): verl 0.9.1's own RLHFDataset reads the `mvp export --format verl` parquet
files with the tiny Qwen2.5-VL processor; the shipped recipe (configs/verl/mvp-grpo-qwen25vl.yaml) is
composed by verl's own Hydra defaults, and from that config verl's get_custom_reward_fn finds the
reward and verl's load_reward_manager (the manager the recipe names) scores given responses.
It only reports what verl produced (JSON); the test judges it against the frozen set.

Usage: python peers_verl_load.py EXPORT_DIR PROCESSOR_DIR REWARD_FN RESPONSES_JSON RESULT_JSON RECIPE_YAML
RESPONSES_JSON: {puzzle_id: [response text, ...]}. Runs from EXPORT_DIR: the rows' `./` image paths
are relative to it (formats.py)."""
from __future__ import annotations

import json
import os
import sys
from pathlib import Path


def load_rows(proc, cfg) -> dict:
    from verl.utils.dataset.rl_dataset import RLHFDataset
    from verl.utils.tokenizer import build_multimodal_processor_inputs

    splits = {}
    for f in sorted(Path(".").glob("*.parquet")):
        ds = RLHFDataset(data_files=str(f), tokenizer=proc.tokenizer, config=cfg, processor=proc)
        rows = []
        for i in range(len(ds)):
            row = ds[i]
            msgs = row["raw_prompt"]
            # what verl's rollout does with raw_prompt (RLHFDataset.process_vision_info docstring)
            images, videos, _ = RLHFDataset._process_multi_modal_info(msgs, ds.image_patch_size, cfg)
            text = proc.apply_chat_template(msgs, add_generation_prompt=True, tokenize=False)
            enc = build_multimodal_processor_inputs(proc, text=[text], images=images, videos=videos)
            rows.append({"puzzle_id": row["extra_info"]["puzzle_id"], "split": row["extra_info"]["split"],
                         "image_paths": [c["image"] for m in msgs if isinstance(m["content"], list)
                                         for c in m["content"] if c["type"] == "image"],
                         "n_images": len(images or []), "n_videos": len(videos or []),
                         "vision_starts": text.count("<|vision_start|>"),
                         "grid_rows": int(enc["image_grid_thw"].shape[0]),
                         "prompt_tokens": int(enc["input_ids"].shape[1]),
                         "data_source": row["data_source"], "reward_model": row["reward_model"],
                         "extra_info": {k: row["extra_info"][k] for k in ("puzzle_id", "split", "set_hash")}})
        splits[f.stem] = {"file_rows": ds_file_rows(f), "rows": rows}
    return splits


def ds_file_rows(f: Path) -> int:
    import pyarrow.parquet as pq
    return pq.read_metadata(f).num_rows


def compose_recipe(recipe: Path, export_dir: str, reward_fn: str):
    """The recipe as `python -m verl.trainer.main_ppo --config-path --config-name` composes it."""
    from hydra import compose, initialize_config_dir
    os.environ.update({"MVP_EXPORT": export_dir, "MVP_REWARD": reward_fn, "MVP_MODEL": "unused"})
    with initialize_config_dir(config_dir=str(recipe.parent), version_base=None):
        return compose(config_name=recipe.stem)


def reward_found(cfg) -> dict:
    """What verl's loader takes from the composed recipe (None: verl falls back to its own scorers)."""
    import inspect
    from verl.trainer.ppo.reward import get_custom_reward_fn
    fn = get_custom_reward_fn(cfg)
    raw = fn.args[0] if fn is not None else None      # a partial over verl's kwargs wrapper
    return {"file": inspect.getfile(raw) if raw else None, "name": raw.__name__ if raw else None,
            "manager": cfg.reward.reward_manager.name,
            "data_files": {k: str(cfg.data[k]) for k in ("train_files", "val_files")}}


def score(tok, cfg, rows: list[dict], responses: dict) -> list[dict]:
    import numpy as np
    import torch
    from verl import DataProto
    from verl.trainer.ppo.reward import load_reward_manager

    mgr = load_reward_manager(cfg, tok)
    out = []
    for r in rows:
        for resp in responses[r["puzzle_id"]]:
            ids = torch.tensor(tok(resp, add_special_tokens=False)["input_ids"])
            prompt = torch.tensor([tok.pad_token_id or 0])
            dp = DataProto.from_dict(
                tensors={"prompts": prompt[None], "responses": ids[None],
                         "attention_mask": torch.ones(1, 1 + len(ids), dtype=torch.long)},
                non_tensors={k: np.array([r[k]], dtype=object) for k in ("data_source", "reward_model", "extra_info")})
            res = mgr.loop.run_until_complete(mgr.run_single(dp))
            out.append({"puzzle_id": r["puzzle_id"], "response": resp, "score": float(res["reward_score"])})
    return out


def main(export_dir, processor_dir, reward_fn, responses_json, result_json, recipe) -> None:
    import tensordict
    import transformers
    import verl
    from omegaconf import OmegaConf
    from transformers import AutoProcessor

    responses = json.loads(Path(responses_json).read_text())
    proc = AutoProcessor.from_pretrained(processor_dir)
    os.chdir(export_dir)
    # verl's defaults (max_prompt_length 1024, filter_overlong_prompts on: a longer or unreadable prompt
    # is dropped). workers=None: the filter runs in this process (a forked datasets pool deadlocks
    # here once torch has run in the parent).
    cfg = OmegaConf.create({"filter_overlong_prompts_workers": None,
                            "cache_dir": str(Path(result_json).parent / "verl-cache")})
    splits = load_rows(proc, cfg)
    recipe_cfg = compose_recipe(Path(recipe), export_dir, reward_fn)
    rows = [r for s in splits.values() for r in s["rows"]]
    scores = score(proc.tokenizer, recipe_cfg, rows, responses)
    Path(result_json).write_text(json.dumps({
        "versions": {"verl": verl.__version__, "transformers": transformers.__version__,
                     "tensordict": tensordict.__version__, "verl_file": verl.__file__},
        "splits": splits, "reward": reward_found(recipe_cfg), "scores": scores}))


if __name__ == "__main__":
    main(*[str(Path(a).resolve()) for a in sys.argv[1:7]])

"""The verl recipe of docs/scale.md, as far as a CPU machine without verl checks it: the shipped config
(configs/verl/mvp-grpo-qwen25vl.yaml) parses and composes on verl's own defaults, every data field it
names is in a real `mvp export --format verl` of a frozen set, every exported prompt fits its
max_prompt_length, its batch sizes divide as verl requires, and the reward it names, loaded by file
path as verl loads `reward.custom_reward_function.path` (also in a bare interpreter without the
studio's packages), gives every exported row's exact answer 1.0. verl composing the config with its
own Hydra and scoring through its own reward loader runs in verl's environment:
tests/test_export_peers.py."""
from __future__ import annotations

import importlib.util
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]
CONFIG = ROOT / "configs" / "verl" / "mvp-grpo-qwen25vl.yaml"
ENV = ("MVP_EXPORT", "MVP_MODEL", "MVP_REWARD", "MVP_VAL_DUMPS")      # what the config reads from the environment
_INTERP = re.compile(r"\$\{([^}]+)\}")


@pytest.fixture(scope="module")
def cfg() -> dict:
    return yaml.safe_load(CONFIG.read_text())


def _get(cfg: dict, dotted: str):
    node = cfg
    for k in dotted.split("."):
        node = node[k]
    return node


def resolve(cfg: dict, value, env: dict):
    """OmegaConf's `${oc.env:NAME,default}` and `${a.b}` interpolations, as Hydra resolves them."""
    def sub(m):
        expr = m.group(1)
        if expr.startswith("oc.env:"):
            name, comma, default = expr.removeprefix("oc.env:").partition(",")
            assert name in ENV, f"{name} is not one of the documented variables {ENV}"
            assert name in env or comma, f"{name} has no default and is not set"
            return env.get(name, default)
        return str(resolve(cfg, _get(cfg, expr), env))
    return _INTERP.sub(sub, value) if isinstance(value, str) else value


def _walk(node, prefix=""):
    if isinstance(node, dict):
        for k, v in node.items():
            yield from _walk(v, f"{prefix}{k}.")
    else:
        yield prefix.rstrip("."), node


def test_config_composes_on_verls_defaults(cfg):
    assert cfg["defaults"] == ["ppo_trainer", "_self_"]                # verl's ppo_trainer.yaml, then this file
    assert cfg["hydra"]["searchpath"] == ["pkg://verl.trainer.config"]
    env = {"MVP_MODEL": "/models/m", "MVP_REWARD": "/r.py"}
    for key, value in _walk(cfg):
        if isinstance(value, str):
            resolve(cfg, value, env)                                     # every interpolation resolves
    assert cfg["algorithm"]["adv_estimator"] == "grpo" and cfg["actor_rollout_ref"]["rollout"]["n"] >= 2
    # verl 0.9 reads the reward under `reward.` (a top-level custom_reward_function is its legacy key)
    assert "custom_reward_function" not in cfg and cfg["reward"]["custom_reward_function"]["name"] == "compute_score"
    # the documented command runs this file; the variables it reads are the documented ones
    doc = (ROOT / "docs" / "scale.md").read_text()
    assert "--config-path=/path/to/mvp-studio/configs/verl --config-name=mvp-grpo-qwen25vl" in doc
    assert all(v in CONFIG.read_text().split("hydra:")[0] for v in ENV[:3])
    # what `mvp import-run` needs back: step 0 and a dump per validation
    assert cfg["trainer"]["val_before_train"] is True and cfg["trainer"]["validation_data_dir"]


def test_batch_sizes_divide_as_verl_requires(cfg):
    data, actor = cfg["data"], cfg["actor_rollout_ref"]["actor"]
    n, per_node = cfg["actor_rollout_ref"]["rollout"]["n"], cfg["trainer"]["n_gpus_per_node"]
    assert data["train_batch_size"] % actor["ppo_mini_batch_size"] == 0
    for nodes in (1, 2, 4):                                              # one node, and across nodes
        world = nodes * per_node
        assert data["train_batch_size"] * n % world == 0
        assert actor["ppo_mini_batch_size"] * n % world == 0
        assert actor["ppo_mini_batch_size"] * n // world % actor["ppo_micro_batch_size_per_gpu"] == 0
    assert per_node % cfg["actor_rollout_ref"]["rollout"]["tensor_model_parallel_size"] == 0


def _rows(cfg, export: Path) -> dict[str, list[dict]]:
    import pyarrow.parquet as pq
    env = {"MVP_EXPORT": str(export), "MVP_MODEL": "m", "MVP_REWARD": "r"}
    out = {}
    for key in ("train_files", "val_files"):
        f = Path(resolve(cfg, cfg["data"][key], env))
        assert f.is_file(), f"data.{key}: {f} is not in the export"
        out[key] = pq.read_table(f).to_pylist()
    return out


def test_every_data_field_is_in_a_real_verl_export(cfg, engine_set):
    from mvp_core.export.formats import DATA_SOURCE, IMAGE_SLOT
    export, recs = engine_set["exports"]["verl"], engine_set["records"]
    data = cfg["data"]
    rows = _rows(cfg, export)
    assert all(rows.values())
    for key, split in (("train_files", "train"), ("val_files", "validation")):
        for row in rows[key]:
            # the keys the config names, and the two verl's reward manager reads by fixed name
            for col in (data["prompt_key"], data["image_key"], data["reward_fn_key"], "reward_model", "extra_info"):
                assert col in row, f"{col} is not a column of {split}.parquet"
            (msg,) = row[data["prompt_key"]]
            images = [x["image"] for x in row[data["image_key"]]]
            assert msg["role"] == "user" and msg["content"].count(IMAGE_SLOT) == len(images) > 0
            assert all((export / p).is_file() for p in images)          # ./-relative to the export folder
            assert row[data["reward_fn_key"]] == DATA_SOURCE
            gt = json.loads(row["reward_model"]["ground_truth"])
            rec = recs[row["extra_info"]["puzzle_id"]]
            assert gt == {"answer": rec["answer"], "pool": [o["label"] for o in rec["options"]]}
            assert row["extra_info"]["split"] == split == {"val": "validation"}.get(rec["split"], rec["split"])


def test_every_exported_prompt_fits_max_prompt_length(cfg, engine_set):
    """Vision tokens as Qwen2.5-VL counts them (one per 28x28 patch after its resize to a multiple of
    28, within its default pixel bounds), text as at most one token per character plus the chat
    template: with truncation=error and no filtering, no row may be longer."""
    from PIL import Image
    from transformers.models.qwen2_vl.image_processing_qwen2_vl import smart_resize
    export = engine_set["exports"]["verl"]
    longest = 0
    for rows in _rows(cfg, export).values():
        for row in rows:
            vision = 0
            for x in row["images"]:
                w, h = Image.open(export / x["image"]).size
                rh, rw = smart_resize(h, w, factor=28, min_pixels=4 * 28 * 28, max_pixels=16384 * 28 * 28)
                vision += (rh // 28) * (rw // 28)
            longest = max(longest, vision + len(row["prompt"][0]["content"]) + 64)
    assert longest <= cfg["data"]["max_prompt_length"], longest


def _load_by_path(path: str):
    # verl's custom_reward_function loader: a module from the file, then the named function
    spec = importlib.util.spec_from_file_location("custom_module", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_the_reward_by_path_gives_exact_answers_full_marks(cfg, engine_set, tmp_path):
    from mvp_core.reward import render_answer
    path = resolve(cfg, cfg["reward"]["custom_reward_function"]["path"],
                   {"MVP_REWARD": str(ROOT / "mvp_core" / "export" / "reward_fn.py")})
    fn = getattr(_load_by_path(path), cfg["reward"]["custom_reward_function"]["name"])
    n = 0
    for rows in _rows(cfg, engine_set["exports"]["verl"]).values():
        for row in rows:
            gt = row["reward_model"]["ground_truth"]
            answer = json.loads(gt)["answer"]
            exact = render_answer(answer, "the motion continues")
            assert fn(row["data_source"], exact, gt, row["extra_info"]) == 1.0
            assert fn(row["data_source"], render_answer(answer[::-1] if len(answer) > 1 else ["Z"]), gt,
                      row["extra_info"]) < 1.0
            n += 1
    assert n == len(engine_set["records"]) - sum(r["split"] == "test" for r in engine_set["records"].values())
    # in an interpreter without the studio's packages (verl's environment): the file finds the reward itself
    row = _rows(cfg, engine_set["exports"]["verl"])["val_files"][0]
    gt = row["reward_model"]["ground_truth"]
    exact, info = render_answer(json.loads(gt)["answer"], "x"), {"puzzle_id": row["extra_info"]["puzzle_id"]}
    logged = str(ROOT / "mvp_core" / "export" / "logged_reward.py")    # docs/scale.md's id-logging variant
    for file, want in ((path, "1.0"), (logged, str({"score": 1.0, "puzzle_id": info["puzzle_id"]}))):
        code = (f"import importlib.util as u; s = u.spec_from_file_location('custom_module', {file!r}); "
                f"m = u.module_from_spec(s); s.loader.exec_module(m); "
                f"print(m.compute_score('mvp', {exact!r}, {gt!r}, {info!r}))")
        res = subprocess.run([sys.executable, "-I", "-S", "-c", code], cwd=tmp_path, capture_output=True, text=True,
                             timeout=60)
        assert res.returncode == 0 and res.stdout.strip() == want, (file, res.stdout, res.stderr)
    res = subprocess.run([sys.executable, "-I", "-S", "-c", "import mvp_core"], cwd=tmp_path, capture_output=True)
    assert res.returncode != 0                                           # it really had no studio packages

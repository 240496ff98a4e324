"""The engine exports loaded by the engines' own code: verl 0.9.1 and
LLaMA-Factory pin other transformers versions than .venv, so each runs in its overlay
(requirements-peers.txt, built by scripts/setup_peers.sh) from a worker script in a subprocess
(tests/peers_*_load.py), which reports what the consumer produced; this side judges it against the
frozen set: every row kept, one loaded image per slot, each image a context frame or an option in
order and never a masked frame; verl's own reward loader gives the exported solution 1.0 with the
project's compute_score, and LLaMA-Factory's supervised text is that solution."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from mvp_core.export.formats import IMAGE_SLOT, masked_uris, solution
from mvp_core.reward import score_completion
from test_export_formats import SPLITS, _frozen, _sha

ROOT = Path(__file__).resolve().parents[1]
TINY = ROOT / "assets" / "clock-sft"             # the tiny Qwen2.5-VL (processor files included)
REWARD_FN = ROOT / "mvp_core" / "export" / "reward_fn.py"
RECIPE = ROOT / "configs" / "verl" / "mvp-grpo-qwen25vl.yaml"


def _overlay(name: str) -> Path:
    # scripts/test.sh builds the overlays first; a targeted run builds them here (a no-op when built)
    subprocess.run([str(ROOT / "scripts" / "setup_peers.sh")], check=True)
    return ROOT / ".peers" / name


def _run_worker(overlay: str, script: str, *args, env: dict | None = None) -> None:
    env = {**os.environ, "PYTHONPATH": str(_overlay(overlay)), "HF_HUB_OFFLINE": "1",
           "TOKENIZERS_PARALLELISM": "false", **(env or {})}
    p = subprocess.run([sys.executable, str(ROOT / "tests" / script), *map(str, args)], env=env,
                       capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr[-4000:]


def _check_row_images(out: Path, rec: dict, paths: list[str], data_dir: Path) -> None:
    s, m = rec["mask"]["start"], rec["mask"]["length"]
    ctx = [f["uri"] for i, f in enumerate(rec["frames"]) if not s <= i < s + m]
    assert [os.path.normpath(p) for p in paths] == ctx + [o["uri"] for o in rec["options"]]
    assert all((out / p).is_file() for p in paths)
    masked = {_sha(data_dir / u) for u in masked_uris(rec)}
    assert not masked & {_sha(out / p) for p in paths[:len(ctx)]}


@pytest.mark.slow
@pytest.mark.parametrize("store_db", ["sqlite"], indirect=True)
def test_verl_rlhf_dataset_and_reward_loader(store_db, tmp_path):
    """verl's RLHFDataset keeps every row (its over-long filter on, as by default) with one image per
    slot; the shipped recipe composed by verl's Hydra names the project's reward where verl's
    get_custom_reward_fn looks for it, and the reward manager verl loads from that config gives the
    exported solution 1.0 and a wrong order less."""
    out, recs, h = _frozen(store_db, tmp_path, "verl")
    responses = {}
    for pid, rec in recs.items():
        wrong = list(reversed(rec["answer"])) if len(rec["answer"]) > 1 else \
            [next(o["label"] for o in rec["options"] if o["label"] not in rec["answer"])]
        responses[pid] = [solution(rec), solution({**rec, "answer": wrong})]
    (tmp_path / "responses.json").write_text(json.dumps(responses))
    result = tmp_path / "verl-result.json"
    _run_worker("verl", "peers_verl_load.py", out, TINY, REWARD_FN, tmp_path / "responses.json", result, RECIPE,
                env={"HF_DATASETS_CACHE": str(tmp_path / "hf-cache")})
    res = json.loads(result.read_text())

    assert res["versions"]["verl"] == "0.9.1" and res["versions"]["verl_file"].startswith(str(ROOT / ".peers"))
    assert set(res["splits"]) == {SPLITS[r["split"]] for r in recs.values()}       # train, validation, test
    rows = [r for s in res["splits"].values() for r in s["rows"]]
    assert all(len(s["rows"]) == s["file_rows"] for s in res["splits"].values())
    assert sorted(r["puzzle_id"] for r in rows) == sorted(recs)
    for r in rows:
        rec = recs[r["puzzle_id"]]
        slots = len(rec["frames"]) - rec["mask"]["length"] + len(rec["options"])
        assert r["n_images"] == r["vision_starts"] == r["grid_rows"] == len(r["image_paths"]) == slots
        assert r["n_videos"] == 0 and r["extra_info"]["set_hash"] == h
        _check_row_images(out, rec, r["image_paths"], store_db.data_dir)
    assert res["reward"]["file"] == str(REWARD_FN) and res["reward"]["name"] == "compute_score"
    assert res["reward"]["manager"] == "naive"
    assert {Path(f).name for f in res["reward"]["data_files"].values()} <= {f"{s}.parquet" for s in res["splits"]}
    scores = {(s["puzzle_id"], s["response"]): s["score"] for s in res["scores"]}
    assert len(scores) == 2 * len(recs)
    for pid, (right, wrong) in responses.items():
        assert scores[pid, right] == 1.0 and scores[pid, wrong] < 1.0


@pytest.mark.slow
@pytest.mark.parametrize("store_db", ["sqlite"], indirect=True)
def test_llamafactory_get_dataset(store_db, tmp_path):
    """LLaMA-Factory's get_dataset (its dataset_info.json parser, sharegpt converter, qwen2_vl template
    and SFT preprocessing) keeps every row of every split, one image per slot with the files in
    place, and the supervised text is the exported solution (reward 1.0)."""
    out, recs, _ = _frozen(store_db, tmp_path, "llamafactory")
    result = tmp_path / "lf-result.json"
    _run_worker("llamafactory", "peers_llamafactory_load.py", out, TINY, tmp_path / "lf-work", result,
                env={"HF_DATASETS_CACHE": str(tmp_path / "hf-cache")})
    res = json.loads(result.read_text())

    assert res["versions"]["llamafactory"] == "0.9.5"
    assert res["versions"]["llamafactory_file"].startswith(str(ROOT / ".peers"))
    info = json.loads((out / "dataset_info.json").read_text())
    assert set(res["splits"]) == set(info)
    n = 0
    for name, s in res["splits"].items():
        exported = json.loads((out / info[name]["file_name"]).read_text())
        assert len(s["rows"]) == s["file_rows"] == len(exported)
        for got, row in zip(s["rows"], exported):      # LLaMA-Factory keeps the file's order
            n += 1
            rec = recs[row["puzzle_id"]]
            paths = [os.path.relpath(p, out) for p in got["image_paths"]]
            assert got["vision_starts"] == len(paths) == row["messages"][0]["content"].count(IMAGE_SLOT)
            assert got["n_videos"] == 0
            _check_row_images(out, rec, paths, store_db.data_dir)
            assert score_completion(got["label_text"], rec["answer"], [o["label"] for o in rec["options"]]).total == 1.0
    assert n == len(recs)

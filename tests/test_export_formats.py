"""Exports for the engines (mvp_core/export/formats.py): every format in the one registry exports a
frozen set; each is read back with the consumer's loading code that installs here (datasets'
parquet/json readers, which TRL, verl and EasyR1 use) and checked against its documented fields:
every row kept, one image per `<image>` slot, every image a context frame or an option in order and
never a masked frame, and the exported solution scores 1.0 with the project's reward."""
from __future__ import annotations

import hashlib
import importlib.util
import json
from pathlib import Path

import pytest

from app.cli import main
from db import review
from db.sets.curated import freeze_set, load_set
from db.users.accounts import add_user
from mvp_core.export.formats import FORMATS, IMAGE_SLOT, masked_uris
from mvp_core.reward import score_completion

REWARD_FN = Path(__file__).resolve().parents[1] / "mvp_core" / "export" / "reward_fn.py"


def _compute_score():
    # As verl's custom_reward_function.path does: load the file by path, take compute_score.
    spec = importlib.util.spec_from_file_location("custom_module", REWARD_FN)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod.compute_score


def _frozen(store_db, tmp_path, fmt):
    with store_db.Session() as s:
        u = add_user(s, "cur", "curator", "a-password-1")[0].id
        s.commit()
        for r in store_db.records:
            review.submit_verdict(s, u, r["id"], "accept")
        h = freeze_set(s, "fx", min_distractors=1, split={"train": 0.5, "val": 0.25, "test": 0.25})["content_hash"]
        recs = {r["id"]: r for r in load_set(s, "fx")}
    out = tmp_path / fmt
    assert main(["export", "--set", "fx", "--format", fmt, "--out", str(out),
                 "--db", store_db.url, "--data", str(store_db.data_dir)]) == 0
    return out, recs, h


def _sha(p: Path) -> str:
    return hashlib.sha256(p.read_bytes()).hexdigest()


def _check_images(out: Path, rec: dict, images: list[str], data_dir: Path):
    s, m = rec["mask"]["start"], rec["mask"]["length"]
    ctx = [f["uri"] for i, f in enumerate(rec["frames"]) if not s <= i < s + m]
    assert [p.removeprefix("./") for p in images] == ctx + [o["uri"] for o in rec["options"]]
    # no context image shows a masked frame: neither by uri nor by content
    masked = {_sha(data_dir / u) for u in masked_uris(rec)}
    assert not masked & {_sha(out / p) for p in images[:len(ctx)]}
    assert all((out / p).is_file() for p in images)


def _pool(gt: str):
    g = json.loads(gt)
    return g["answer"], g["pool"]


SPLITS = {"train": "train", "val": "validation", "test": "test"}     # the set's names -> datasets'


@pytest.mark.parametrize("fmt", ["verl", "easyr1"])
def test_rl_parquet_exports(store_db, tmp_path, fmt):
    from datasets import load_dataset
    out, recs, h = _frozen(store_db, tmp_path, fmt)
    ds = load_dataset(str(out), cache_dir=str(tmp_path / "hf-cache"))   # the split files as the card names them
    assert set(ds) == {SPLITS[r["split"]] for r in recs.values()}
    assert sum(len(d) for d in ds.values()) == len(recs)
    compute_score = _compute_score()
    for split, d in ds.items():
        for row in d:
            if fmt == "verl":
                text, images = row["prompt"][0]["content"], [x["image"] for x in row["images"]]
                rec, gt = recs[row["extra_info"]["puzzle_id"]], row["reward_model"]["ground_truth"]
                assert row["extra_info"]["split"] == split and row["extra_info"]["set_hash"] == h
                assert row["data_source"] == "mvp" and row["reward_model"]["style"] == "rule"
            else:
                text, images, rec, gt = row["problem"], row["images"], recs[row["puzzle_id"]], row["ground_truth"]
                # the plain answer text, as EasyR1's stock rewards compare it with the <answer> tag's text
                assert row["answer"] == ", ".join(rec["answer"]) and row["split"] == split
            assert text.count(IMAGE_SLOT) == len(images)
            _check_images(out, rec, images, store_db.data_dir)
            answer, pool = _pool(gt)
            sol = f"<think>the motion</think><answer>{', '.join(rec['answer'])}</answer>"
            assert compute_score(row.get("data_source", "mvp"), sol, gt, {}) == 1.0
            wrong = list(reversed(answer)) if len(answer) > 1 else [next(p for p in pool if p not in answer)]
            assert compute_score("mvp", f"<think>x</think><answer>{', '.join(wrong)}</answer>", gt) < 1.0


def test_trl_export(store_db, tmp_path):
    from datasets import load_dataset
    out, recs, _ = _frozen(store_db, tmp_path, "trl")
    ds = load_dataset("parquet", data_files={p.stem: str(p) for p in out.glob("*.parquet")},
                      cache_dir=str(tmp_path / "hf-cache"))
    n = 0
    for d in ds.values():
        # the reward's columns, as TRL passes them: answer and options (labels)
        texts = [c if isinstance(c, str) else c[-1]["content"] for c in d["completion"]]
        assert [score_completion(t, list(a), [o["label"] if isinstance(o, dict) else o for o in opts]).total
                for t, a, opts in zip(texts, d["answer"], d["options"])] == [1.0] * len(d)
        for row in d:
            n += 1
            slots = sum(c["type"] == "image" for c in row["prompt"][0]["content"])
            assert slots == len(row["images"])
            _check_images(out, recs[row["puzzle_id"]], row["images"], store_db.data_dir)
    assert n == len(recs)


def test_llamafactory_export(store_db, tmp_path):
    out, recs, _ = _frozen(store_db, tmp_path, "llamafactory")
    info = json.loads((out / "dataset_info.json").read_text())
    n = 0
    for name, spec in info.items():
        assert spec["formatting"] == "sharegpt" and spec["columns"] == {"messages": "messages", "images": "images"}
        for row in json.loads((out / spec["file_name"]).read_text()):
            n += 1
            user, asst = row["messages"]
            assert user["role"] == "user" and asst["role"] == "assistant"
            assert user["content"].count(IMAGE_SLOT) == len(row["images"])
            rec = recs[row["puzzle_id"]]
            _check_images(out, rec, row["images"], store_db.data_dir)
            assert score_completion(asst["content"], rec["answer"], [o["label"] for o in rec["options"]]).total == 1.0
    assert n == len(recs)


def test_hf_export_has_no_masked_context(store_db, tmp_path):
    from datasets import load_dataset
    out, recs, _ = _frozen(store_db, tmp_path, "hf")
    ds = load_dataset(str(out), cache_dir=str(tmp_path / "hf-cache"))   # a cache of its own: no other run's rows
    assert sum(len(d) for d in ds.values()) == len(recs)
    for d in ds.values():
        for row in d:
            rec = recs[row["id"]]
            masked = {_sha(store_db.data_dir / u) for u in masked_uris(rec)}
            ctx = row["context_before"] + row["context_after"]
            assert len(ctx) == len(rec["frames"]) - rec["mask"]["length"]
            assert not masked & {hashlib.sha256(im.tobytes()).hexdigest() for im in ctx} - {None}
            assert row["option_labels"] == [o["label"] for o in rec["options"]]


def test_registry_is_the_cli_choices(capsys):
    with pytest.raises(SystemExit):
        main(["export", "--help"])
    help_text = capsys.readouterr().out
    assert all(k in help_text for k in FORMATS)
    with pytest.raises(SystemExit) as e:    # argparse: a format outside the registry is refused
        main(["export", "--set", "x", "--format", "nope", "--out", "/tmp/x"])
    assert e.value.code == 2 and "invalid choice" in capsys.readouterr().err


def test_trl_export_through_trls_data_path(store_db, tmp_path):
    """TRL's own multimodal preparation (trl.data_utils.prepare_multimodal_messages, as its trainers
    call it) fills every image slot from the row's `images`, and the tiny Qwen2.5-VL processor then
    gives one image's tokens per slot."""
    from datasets import load_dataset
    from PIL import Image
    from trl.data_utils import prepare_multimodal_messages

    from mvp_core.model.tiny import build_processor, build_tokenizer
    out, recs, _ = _frozen(store_db, tmp_path, "trl")
    ds = load_dataset("parquet", data_files={p.stem: str(p) for p in out.glob("*.parquet")},
                      cache_dir=str(tmp_path / "hf-cache"))
    proc = build_processor(build_tokenizer())
    n = 0
    for d in ds.values():
        for row in d:
            n += 1
            imgs = [Image.open(out / p).convert("RGB") for p in row["images"]]
            msgs = prepare_multimodal_messages(row["prompt"] + row["completion"], images=imgs)
            filled = [c["image"] for m in msgs for c in m["content"] if c["type"] == "image"]
            assert len(filled) == len(imgs) and all(a is b for a, b in zip(filled, imgs))
            text = proc.apply_chat_template(msgs, tokenize=False)
            assert text.count("<|vision_start|>") == len(imgs)
            enc = proc(text=[text], images=imgs, return_tensors="pt")
            assert enc["image_grid_thw"].shape[0] == len(imgs)
    assert n == len(recs)


@pytest.mark.parametrize("fmt", list(FORMATS))
def test_every_export_has_a_dataset_card(store_db, tmp_path, fmt):
    """README.md with the Hub's YAML front matter: license, task, the set's hash and how it was made,
    and (every format `datasets` reads) the split files and features that load_dataset(DIR) uses:
    train / validation / test, every puzzle once."""
    import yaml
    from datasets import load_dataset
    out, recs, h = _frozen(store_db, tmp_path, fmt)
    text = (out / "README.md").read_text()
    meta = yaml.safe_load(text.split("---\n")[1])
    assert meta["license"] == "other" and meta["task_categories"] == ["video-text-to-text"]
    assert meta["mvp"]["content_hash"] == h and meta["mvp"]["format"] == fmt and h in text
    assert meta["mvp"]["made"]["params"]["split_seed"] == 0 and "mvp sets freeze" in text
    counts = {}
    for r in recs.values():
        counts[SPLITS[r["split"]]] = counts.get(SPLITS[r["split"]], 0) + 1
    assert {k: v["puzzles"] for k, v in meta["mvp"]["splits"].items()} == counts
    if fmt == "jsonl":                  # the studio's snapshot (`mvp import`), not a `datasets` folder
        assert "configs" not in meta
        return
    assert meta["dataset_info"]["features"]
    ds = load_dataset(str(out), cache_dir=str(tmp_path / "hf-cache"))
    assert {k: len(v) for k, v in ds.items()} == counts
    key = {"hf": "id", "video-r1": "problem_id"}.get(fmt, "puzzle_id")
    for split, d in ds.items():
        rows = [r["extra_info"] for r in d] if fmt == "verl" else list(d)
        assert {SPLITS[recs[r[key]]["split"]] for r in rows} == {split}


def test_export_license_flag(store_db, tmp_path, capsys):
    import yaml
    out, _, _ = _frozen(store_db, tmp_path, "trl")
    again = tmp_path / "licensed"
    assert main(["export", "--set", "fx", "--format", "trl", "--out", str(again), "--license", "cc-by-4.0",
                 "--db", store_db.url, "--data", str(store_db.data_dir)]) == 0
    assert yaml.safe_load((again / "README.md").read_text().split("---\n")[1])["license"] == "cc-by-4.0"


def test_push_to_hub_failure_is_one_line_and_keeps_the_export(store_db, tmp_path, capsys, monkeypatch):
    """No Hub here: a Hub that refuses the connection. The export is written and checked first, the
    push failure is one line naming the repository, and the folder still loads whole."""
    import huggingface_hub.constants
    from datasets import load_dataset
    _, recs, _ = _frozen(store_db, tmp_path, "verl")
    monkeypatch.setattr(huggingface_hub.constants, "ENDPOINT", "http://127.0.0.1:9")
    monkeypatch.setenv("HF_TOKEN", "hf_not_a_token")
    out = tmp_path / "pushed"
    rc = main(["export", "--set", "fx", "--format", "verl", "--out", str(out), "--push-to-hub", "me/mvp-fx",
               "--db", store_db.url, "--data", str(store_db.data_dir)])
    err = capsys.readouterr().err
    assert rc == 2 and len(err.strip().splitlines()) == 1
    assert "'me/mvp-fx'" in err and f"complete in {out}" in err
    ds = load_dataset(str(out), cache_dir=str(tmp_path / "hf-cache"))
    assert sum(len(d) for d in ds.values()) == len(recs)

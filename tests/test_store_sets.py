"""Curated sets on both engines: freeze, prune rejected distractors, export (jsonl, hf, video-r1),
and a jsonl export imported into an empty database gives the same set and hash."""
from __future__ import annotations

import hashlib
import json

import pytest

from app.cli import main
from db import review
from db.importer import import_set
from db.sets import freeze_set, list_sets, load_set, verify_set
from db.users import add_user
from mvp_core.errors import UserError
from mvp_core.puzzle import Puzzle


def _curate(store_db):
    """Accept all but one puzzle; reject one distractor of puzzle 0 and all distractors but one of
    puzzle 1 (excluded with min_distractors=2)."""
    recs = sorted(store_db.records, key=lambda r: r["id"])
    with store_db.Session() as s:
        u = add_user(s, "cur", "curator", "a-password-1")[0].id
        s.commit()
        for r in recs[:-1]:
            review.submit_verdict(s, u, r["id"], "accept")
        review.submit_verdict(s, u, recs[-1]["id"], "reject", reason="broken")
        d0 = [o["label"] for o in recs[0]["options"] if o["kind"] != "target"]
        review.set_option_verdict(s, u, recs[0]["id"], d0[0], "reject", "near_duplicate")
        d1 = [o["label"] for o in recs[1]["options"] if o["kind"] != "target"]
        for lab in d1[:-1]:
            review.set_option_verdict(s, u, recs[1]["id"], lab, "reject", "ambiguous")
    return recs, d0[0]


def test_freeze_prunes_relabels_and_is_immutable(store_db):
    recs, removed = _curate(store_db)
    with store_db.Session() as s:
        out = freeze_set(s, "v1", min_distractors=2)
        assert out["n_puzzles"] == len(recs) - 2 and out["n_excluded"] == 1
        items = load_set(s, "v1")
        assert [r["id"] for r in items] == sorted([recs[0]["id"]] + [r["id"] for r in recs[2:-1]])
        by_id = {r["id"]: r for r in items}
        assert recs[1]["id"] not in by_id and recs[-1]["id"] not in by_id
        p0 = by_id[recs[0]["id"]]
        orig = recs[0]
        assert len(p0["options"]) == len(orig["options"]) - 1
        assert [o["label"] for o in p0["options"]] == [chr(65 + i) for i in range(len(p0["options"]))]
        removed_uri = next(o["uri"] for o in orig["options"] if o["label"] == removed)
        assert removed_uri not in {o["uri"] for o in p0["options"]}
        # the answer still names the targets in temporal order
        by_label = {o["label"]: o for o in p0["options"]}
        tgt = orig["frames"][orig["mask"]["start"]:orig["mask"]["start"] + orig["mask"]["length"]]
        assert [by_label[a]["uri"] for a in p0["answer"]] == [f["uri"] for f in tgt]
        Puzzle.from_dict(p0)
        # later verdicts do not change a frozen set; names cannot be reused
        u = add_user(s, "late", "curator", "a-password-1")[0].id
        s.commit()
        review.submit_verdict(s, u, recs[0]["id"], "reject")
        assert load_set(s, "v1") == items and verify_set(s, "v1")
        with pytest.raises(UserError, match="already exists"):
            freeze_set(s, "v1")
        with pytest.raises(UserError, match="set name"):
            freeze_set(s, "bad name!")
        assert [x["name"] for x in list_sets(s)] == ["v1"]


def test_freeze_with_nothing_accepted(store_db):
    with store_db.Session() as s:
        with pytest.raises(UserError, match="no puzzles"):
            freeze_set(s, "empty")


def test_jsonl_export_import_roundtrip(store_db, empty_store, tmp_path):
    _curate(store_db)
    with store_db.Session() as s:
        h = freeze_set(s, "rt", min_distractors=2)["content_hash"]
    out = tmp_path / "export"
    args = ["export", "--set", "rt", "--format", "jsonl", "--out", str(out),
            "--db", store_db.url, "--data", str(store_db.data_dir)]
    assert main(args) == 0
    assert hashlib.sha256((out / "puzzles.jsonl").read_bytes()).hexdigest() == h
    manifest = json.loads((out / "set.json").read_text())
    assert manifest["content_hash"] == h
    lines = (out / "puzzles.jsonl").read_text().splitlines()
    uris = {f["uri"] for line in lines for f in json.loads(line)["frames"]}
    assert uris and all((out / u).is_file() for u in uris)
    assert main(args) == 2      # the out folder is not empty any more: a clear error, nothing lost
    # import into an empty database (through the CLI) -> same set, same hash
    data2 = tmp_path / "data2"
    assert main(["import", str(out), "--db", empty_store.url, "--data", str(data2)]) == 0
    with empty_store.Session() as s:
        sets = list_sets(s)
        assert [(x["name"], x["content_hash"]) for x in sets] == [("rt", h)]
        assert [json.dumps(r, sort_keys=True) for r in load_set(s, "rt")] == \
               [json.dumps(json.loads(line), sort_keys=True) for line in lines]
        assert all((data2 / u).is_file() for u in uris)
        with pytest.raises(UserError, match="already exists"):
            import_set(s, out, data2)
    # a tampered export is refused with a one-line error
    (out / "puzzles.jsonl").write_text("\n".join(lines[1:]) + "\n")
    assert main(["import", str(out), "--db", empty_store.url, "--data", str(data2), "--name", "x"]) == 2


def test_hf_and_video_r1_exports(store_db, tmp_path):
    _curate(store_db)
    with store_db.Session() as s:
        freeze_set(s, "fmt", min_distractors=2)
        items = load_set(s, "fmt")
    common = ["--set", "fmt", "--db", store_db.url, "--data", str(store_db.data_dir)]
    assert main(["export", *common, "--format", "hf", "--out", str(tmp_path / "hf")]) == 0
    import datasets
    # a private cache: datasets' shared cache can hand back an older folder's rows
    ds = datasets.load_dataset(str(tmp_path / "hf"), split="train", cache_dir=str(tmp_path / "hf_cache"))
    assert len(ds) == len(items)
    row = ds[0]
    rec = next(r for r in items if r["id"] == row["id"])
    assert row["answer"] == rec["answer"] and len(row["options"]) == len(rec["options"])
    img = row["options"][0]
    assert img.size[0] > 0 and img.mode == "RGB"
    assert len(row["context_before"]) == rec["mask"]["start"]
    assert main(["export", *common, "--format", "video-r1", "--out", str(tmp_path / "vr1")]) == 0
    data = json.loads((tmp_path / "vr1" / "fmt.json").read_text())
    assert len(data) == len(items)
    for d in data:
        assert {"problem_id", "problem", "data_type", "problem_type", "options", "solution", "path"} <= set(d)
        assert (tmp_path / "vr1" / d["path"]).is_file()
        assert all((tmp_path / "vr1" / u).is_file() for u in d["frames"])
    r0 = next(r for r in items if r["id"] == data[0]["problem_id"])
    assert data[0]["solution"] == f"<answer>{', '.join(r0['answer'])}</answer>"
    assert main(["export", "--set", "nope", "--format", "jsonl", "--out", str(tmp_path / "y"),
                 "--db", store_db.url]) == 2     # unknown set: one-line error
    assert not (tmp_path / "y").exists()

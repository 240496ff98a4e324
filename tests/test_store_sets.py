"""Curated sets on both engines: freeze, prune rejected distractors, export (jsonl, hf, video-r1),
and a jsonl export imported into an empty database gives the same set and hash."""
from __future__ import annotations

import hashlib
import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from app.cli import main
from db import review
from db.sets.importer import import_set, read_export
from db.sets.curated import assign_splits, content_hash, freeze_set, list_sets, load_set, parse_split, verify_set
from db.users.accounts import add_user
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
    with store_db.Session() as s, pytest.raises(UserError, match="no puzzles"):
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
    # and so are records or a manifest that are not UTF-8 text or not the right JSON shapes
    good_manifest = (out / "set.json").read_bytes()
    for name, data, says in (("puzzles.jsonl", b'{"id": "caf\xe9"}\n', "not UTF-8 text"),
                             ("puzzles.jsonl", b'[1, 2]\n', "malformed export"),
                             ("set.json", b"\xff\xfe{}", "not UTF-8 text"),
                             ("set.json", b"[]", "malformed export")):
        (out / "puzzles.jsonl").write_text("\n".join(lines) + "\n")
        (out / "set.json").write_bytes(good_manifest)
        (out / name).write_bytes(data)
        with pytest.raises(UserError, match=says):
            read_export(out)
    with empty_store.Session() as s:
        assert [x["name"] for x in list_sets(s)] == ["rt"]      # nothing half-imported
    # hostile exports (records and manifest consistent, so only the frames can refuse them): a uri
    # naming the database, a frame that is a symlink to a file outside, bytes that are not the name's
    (out / "set.json").write_bytes(good_manifest)
    db_file = data2 / "evil" / "mvp.sqlite"
    db_file.parent.mkdir()
    db_file.write_bytes(b"the importing side's database")
    recs = [json.loads(x) for x in lines]
    uri = recs[0]["frames"][0]["uri"]
    secret = tmp_path / "secret.txt"
    secret.write_text("not for the web")
    for change, says in (("mvp.sqlite", "is not a frame of the store"), ("symlink", "do not match its name"),
                         ("bytes", "do not match its name")):
        bad = json.loads(json.dumps(recs))
        if change == "mvp.sqlite":
            bad[0]["frames"][0]["uri"] = "evil/mvp.sqlite"
            (out / "evil").mkdir(exist_ok=True)
            (out / "evil" / "mvp.sqlite").write_bytes(b"attacker's bytes, another size")
        frame = out / uri
        keep = frame.read_bytes()
        if change == "symlink":
            frame.unlink()
            frame.symlink_to(secret)
        if change == "bytes":
            frame.write_bytes(keep + b"tampered")
        body = [json.dumps(r, sort_keys=True, separators=(",", ":"), ensure_ascii=False) for r in bad]
        (out / "puzzles.jsonl").write_text("\n".join(body) + "\n")
        (out / "set.json").write_text(json.dumps({**json.loads(good_manifest), "content_hash": content_hash(body)}))
        before = sorted(p.relative_to(data2) for p in data2.rglob("*"))
        with empty_store.Session() as s, pytest.raises(UserError, match=says):
            import_set(s, out, data2, name=f"evil-{change}")
        assert sorted(p.relative_to(data2) for p in data2.rglob("*")) == before        # nothing copied
        if frame.is_symlink():
            frame.unlink()
        frame.write_bytes(keep)
    assert db_file.read_bytes() == b"the importing side's database"
    with empty_store.Session() as s:
        assert [x["name"] for x in list_sets(s)] == ["rt"]


def test_hf_and_video_r1_exports(store_db, tmp_path):
    _curate(store_db)
    with store_db.Session() as s:
        freeze_set(s, "fmt", min_distractors=2)
        items = load_set(s, "fmt")
    common = ["--set", "fmt", "--db", store_db.url, "--data", str(store_db.data_dir)]
    assert main(["export", *common, "--format", "hf", "--out", str(tmp_path / "hf")]) == 0
    import datasets
    # a private cache: datasets' shared cache can hand back an older folder's rows
    dd = datasets.load_dataset(str(tmp_path / "hf"), cache_dir=str(tmp_path / "hf_cache"))
    named = {"train": "train", "val": "validation", "test": "test"}     # the set's split names -> datasets'
    assert sorted(dd) == sorted({named[r["split"]] for r in items}) and sum(len(d) for d in dd.values()) == len(items)
    videos = {k: set(d["video_id"]) for k, d in dd.items()}       # no video in two splits of the export
    assert all(videos[a].isdisjoint(videos[b]) for a in videos for b in videos if a < b)
    assert all(set(d["split"]) == {k} for k, d in dd.items())
    ds = dd["train"]
    row = ds[0]
    rec = next(r for r in items if r["id"] == row["id"])
    assert row["answer"] == rec["answer"] and len(row["options"]) == len(rec["options"])
    img = row["options"][0]
    assert img.size[0] > 0 and img.mode == "RGB"
    assert len(row["context_before"]) == rec["mask"]["start"]
    assert main(["export", *common, "--format", "video-r1", "--out", str(tmp_path / "vr1")]) == 0
    data = [d for f in sorted((tmp_path / "vr1").glob("*.json")) for d in json.loads(f.read_text())]
    assert len(data) == len(items)
    split_of = {r["id"]: named[r["split"]] for r in items}
    for d in data:
        assert {"problem_id", "problem", "data_type", "problem_type", "options", "solution", "path"} <= set(d)
        assert d["split"] == split_of[d["problem_id"]]
        assert (tmp_path / "vr1" / d["split"]).with_suffix(".json").is_file()
        assert (tmp_path / "vr1" / d["path"]).is_file()
    r0 = next(r for r in items if r["id"] == data[0]["problem_id"])
    assert data[0]["solution"] == f"<answer>{', '.join(r0['answer'])}</answer>"
    assert main(["export", "--set", "nope", "--format", "jsonl", "--out", str(tmp_path / "y"),
                 "--db", store_db.url]) == 2     # unknown set: one-line error
    assert not (tmp_path / "y").exists()


@settings(max_examples=200, deadline=None)
@given(st.lists(st.text("abcdef", min_size=1, max_size=3), min_size=1, max_size=40),
       st.sampled_from([(0.8, 0.1, 0.1), (0.5, 0.5, 0.0), (1.0, 0.0, 0.0), (0.34, 0.33, 0.33)]),
       st.integers(0, 5))
def test_split_assignment_by_video(video_ids, fracs, seed):
    fr = dict(zip(("train", "val", "test"), fracs))
    got = assign_splits(video_ids, fr, seed)
    assert set(got) == set(video_ids) and assign_splits(list(reversed(video_ids)), fr, seed) == got
    n = len(set(video_ids))
    counts = {k: sum(v == k for v in got.values()) for k in fr}
    for k, f in fr.items():
        assert abs(counts[k] - f * n) <= 1.0 + (1 if n >= 3 else 0)   # largest remainder, +1 for a forced split
        if f == 0:
            assert counts[k] == 0
    if n >= 3:
        assert all(counts[k] >= 1 for k, f in fr.items() if f > 0)


def test_frozen_set_and_exports_keep_every_video_in_one_split(store_db, tmp_path, capsys):
    """The frozen records, the jsonl export and `mvp eval --split`'s filter: no video crosses splits."""
    from argparse import Namespace

    from app.cli.model import load_puzzles
    _curate(store_db)
    common = ["--db", store_db.url, "--data", str(store_db.data_dir)]
    assert main(["sets", "freeze", "sp", "--split", "train=0.5,val=0.25,test=0.25", "--split-seed", "3", *common]) == 0
    capsys.readouterr()
    with store_db.Session() as s:
        items = load_set(s, "sp")
        params = next(x for x in list_sets(s) if x["name"] == "sp")["params"]
    splits_of: dict[str, set] = {}
    for r in items:
        splits_of.setdefault(r["video"]["id"], set()).add(r["split"])
    assert len(splits_of) >= 3 and all(len(v) == 1 for v in splits_of.values())
    assert {r["split"] for r in items} == {"train", "val", "test"}
    assert params["split"] == {"train": 0.5, "val": 0.25, "test": 0.25} and params["split_seed"] == 3
    assert sum(params["split_videos"].values()) == len(splits_of)
    out = tmp_path / "sp"
    assert main(["export", "--set", "sp", "--format", "jsonl", "--out", str(out), *common]) == 0
    manifest = json.loads((out / "set.json").read_text())
    assert sum(v["puzzles"] for v in manifest["splits"].values()) == len(items)
    exported = [json.loads(line) for line in (out / "puzzles.jsonl").read_text().splitlines()]
    assert [r["split"] for r in exported] == [r["split"] for r in items]
    ns = Namespace(puzzles=str(out / "puzzles.jsonl"), data=None, limit=None, split="test", set=None)
    test_recs, _ = load_puzzles(ns)
    assert test_recs and {r["split"] for r in test_recs} == {"test"}
    assert {r["video"]["id"] for r in test_recs}.isdisjoint({r["video"]["id"] for r in exported if r["split"] != "test"})
    # a bad split: one line, nothing frozen
    assert main(["sets", "freeze", "bad", "--split", "train=0.9,test=0.2", *common]) == 2
    assert capsys.readouterr().err.count("\n") == 1
    with pytest.raises(UserError, match="NAME=FRACTION"):
        parse_split("train:0.8")

"""`mvp export`: a frozen set as jsonl (+ frames), a Hugging Face datasets folder, or Video-R1 JSON.

- jsonl:    OUT/puzzles.jsonl (the set's canonical records, byte for byte: its sha256 is the set's
            content hash), OUT/set.json (manifest), and every frame the records name at OUT/<uri>.
            This is the snapshot `mvp train` reads and `mvp import` takes back.
- hf:       OUT/data/<split>-00000-of-00001.parquet per split with the images embedded (datasets'
            Image feature) and OUT/README.md; `datasets.load_dataset(OUT)` gives the set's splits
            (train / val / test, by video) with PIL images. Records of a set frozen before splits
            existed go to "train".
- verl, easyr1, trl: OUT/<split>.parquet per split, rows built by mvp_core/export/formats.py;
            llamafactory: OUT/<split>.json + OUT/dataset_info.json; video-r1: OUT/<name>.json.
            Their images are the context frames and options only (never a masked frame), copied
            under OUT and named `./<uri>` relative to OUT (run the engine from OUT, or set its
            image folder to OUT).
The list of formats is mvp_core/export/formats.py FORMATS. Every format carries each puzzle's split
(in jsonl it is the record's `split` field) and its tags (`db.review.tags`, the puzzle's own, not its
distractors'): a `tags` list on each row (inside `extra_info` where a format has one), and in jsonl
the manifest's `tags` ({puzzle id: tags}), so the records stay byte for byte the set's."""
from __future__ import annotations

import json
import shutil
from pathlib import Path

from sqlalchemy.orm import Session

from db.sets.importer import MANIFEST, RECORDS, copy_frames
from db.review.tags import puzzle_tags
from db.sets.curated import get_set, set_lines, set_summary, write_lines
from mvp_core.errors import UserError
from mvp_core.export.formats import BUILDERS, FORMATS, llamafactory_info


def _prepare_out(out: Path) -> Path:
    out = Path(out)
    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        raise UserError(f"{out} exists and is not an empty directory")
    out.mkdir(parents=True, exist_ok=True)
    return out


def export_set(session: Session, name: str, fmt: str, out: Path, data_dir: Path) -> dict:
    if fmt not in FORMATS:
        raise UserError(f"format must be one of {', '.join(FORMATS)}")
    cs = get_set(session, name)
    lines = set_lines(session, name)
    records = [json.loads(line) for line in lines]
    tags = puzzle_tags(session, [r["id"] for r in records])
    data_dir = Path(data_dir)
    missing = [u for r in records for u in [f["uri"] for f in r["frames"]] + [o["uri"] for o in r["options"]]
               if not (data_dir / u).is_file()]
    if missing:
        raise UserError(f"{len(missing)} frames of set {name!r} are missing under {data_dir} "
                        f"(first: {missing[0]}); pass the right --data")
    out = _prepare_out(out)
    if fmt == "jsonl":
        write_lines(lines, out / RECORDS)
        manifest = {**set_summary(cs), "created_at": cs.created_at.isoformat(), "format": "mvp-jsonl/1",
                    "splits": split_counts(records), "tags": tags}
        (out / MANIFEST).write_text(json.dumps(manifest, indent=2, sort_keys=True))
        copy_frames(records, data_dir, out)
    elif fmt == "hf":
        _export_hf(records, data_dir, out, cs.name, cs.content_hash, tags)
    else:
        _export_rows(fmt, records, data_dir, out, cs.name, cs.content_hash, tags)
    return {"name": cs.name, "format": fmt, "out": str(out), "n_puzzles": len(records),
            "content_hash": cs.content_hash}


def split_counts(records: list[dict]) -> dict[str, dict[str, int]]:
    """{split: {"puzzles": n, "videos": n}}."""
    out: dict[str, dict[str, int]] = {}
    videos: dict[str, set] = {}
    for r in records:
        k = r.get("split", "train")
        out.setdefault(k, {"puzzles": 0, "videos": 0})["puzzles"] += 1
        videos.setdefault(k, set()).add(r["video"]["id"])
    for k, v in videos.items():
        out[k]["videos"] = len(v)
    return out


def problem_text(rec: dict) -> str:
    """The question in words (the images come separately); labels as in the record."""
    m = rec["mask"]["length"]
    n = len(rec["frames"])
    opts = ", ".join(o["label"] for o in rec["options"])
    return (f"These are {n} frames of a video in temporal order; frames {rec['mask']['start'] + 1} to "
            f"{rec['mask']['start'] + m} are masked. From the options {opts}, choose the {m} frames that "
            f"fill the gap and give their labels in temporal order as <answer>X, Y, ...</answer>.")


def _export_hf(records: list[dict], data_dir: Path, out: Path, name: str, chash: str,
               tags: dict[str, list[str]]) -> None:
    from datasets import Dataset, Features, Image, List, Value

    def img(uri):   # embedded bytes: the parquet file is self-contained
        return {"bytes": (data_dir / uri).read_bytes(), "path": Path(uri).name}
    rows: dict[str, list[dict]] = {}
    for r in records:
        s, m = r["mask"]["start"], r["mask"]["length"]
        split = r.get("split", "train")
        rows.setdefault(split, []).append({
            "id": r["id"], "video_id": r["video"]["id"], "split": split, "problem": problem_text(r),
            "context_before": [img(f["uri"]) for f in r["frames"][:s]],
            "context_after": [img(f["uri"]) for f in r["frames"][s + m:]],
            "options": [img(o["uri"]) for o in r["options"]],
            "option_labels": [o["label"] for o in r["options"]],
            "option_kinds": [o["kind"] for o in r["options"]],
            "answer": list(r["answer"]), "record": json.dumps(r, sort_keys=True), "tags": tags.get(r["id"], [])})
    feats = Features({"id": Value("string"), "video_id": Value("string"), "split": Value("string"),
                      "problem": Value("string"),
                      "context_before": List(Image()), "context_after": List(Image()),
                      "options": List(Image()), "option_labels": List(Value("string")),
                      "option_kinds": List(Value("string")), "answer": List(Value("string")),
                      "record": Value("string"), "tags": List(Value("string"))})
    (out / "data").mkdir()
    for split, split_rows in rows.items():
        Dataset.from_list(split_rows, features=feats).to_parquet(str(out / "data" / f"{split}-00000-of-00001.parquet"))
    configs = "".join(f"  - split: {k}\n    path: data/{k}-*.parquet\n" for k in rows)
    (out / "README.md").write_text(
        f"---\nconfigs:\n- config_name: default\n  data_files:\n{configs}"
        f"---\n# MVP set `{name}`\n\nMasked Video Prediction puzzles, content hash `{chash}`. "
        f"Splits are by video (no video in two splits). `record` holds the full puzzle record "
        f"(docs/ARCHITECTURE.md, \"Puzzle record\").\n")


def _with_tags(row: dict, tags: list[str]) -> dict:
    (row["extra_info"] if isinstance(row.get("extra_info"), dict) else row)["tags"] = tags
    return row


def _export_rows(fmt: str, records: list[dict], data_dir: Path, out: Path, name: str, chash: str,
                 tags: dict[str, list[str]]) -> None:
    copy_frames(records, data_dir, out)
    rows: dict[str, list[dict]] = {}
    for i, r in enumerate(records):
        rows.setdefault(r.get("split", "train"), []).append(
            _with_tags(BUILDERS[fmt](r, i, chash, lambda u: f"./{u}"), tags.get(r["id"], [])))
    if fmt == "video-r1":
        (out / f"{name}.json").write_text(json.dumps([x for v in rows.values() for x in v], indent=1,
                                                     ensure_ascii=False))
    elif fmt == "llamafactory":
        for split, split_rows in rows.items():
            (out / f"{split}.json").write_text(json.dumps(split_rows, indent=1, ensure_ascii=False))
        (out / "dataset_info.json").write_text(
            json.dumps(llamafactory_info({k: f"{k}.json" for k in rows}), indent=2))
    else:
        import pyarrow as pa
        import pyarrow.parquet as pq
        for split, split_rows in rows.items():
            pq.write_table(pa.Table.from_pylist(split_rows), out / f"{split}.parquet")

"""`mvp export`: a frozen set as jsonl (+ frames), a Hugging Face datasets folder, or Video-R1 JSON.

- jsonl:    OUT/puzzles.jsonl (the set's canonical records, byte for byte: its sha256 is the set's
            content hash), OUT/set.json (manifest), and every frame the records name at OUT/<uri>.
            This is the snapshot `mvp train` reads and `mvp import` takes back.
- hf:       OUT/data/<split>-00000-of-00001.parquet per split with the images embedded (datasets'
            Image feature); `datasets.load_dataset(OUT)` gives the set's splits (train /
            validation / test, by video) with PIL images. Records of a set frozen before splits
            existed go to "train".
- verl, trl: OUT/<split>.parquet per split, rows built by mvp_core/export/formats.py; easyr1:
            OUT/data/<split>.parquet (a folder of parquet files only: EasyR1's `DIR@split`);
            llamafactory: OUT/<split>.json + OUT/dataset_info.json. Their images are the context
            frames and options only (never a masked frame), copied under OUT and named `./<uri>`
            relative to OUT (run the engine from OUT, or set its image folder to OUT).
- video-r1: OUT/<split>.json per split (its grpo script trains on the whole file it is given) and
            one storyboard per puzzle under OUT/storyboards/ (mvp_core/export/storyboard.py).
Every export has a dataset card, OUT/README.md (mvp_core/export/card.py): `datasets.load_dataset(OUT)`
reads its splits from it. Split names are `datasets`' (formats.py SPLIT_NAMES: "val" is written
"validation"); in jsonl the records keep the set's own `split` field byte for byte (the set hash).
Every format carries each puzzle's tags (`db.review.tags`, the puzzle's own, not its distractors'): a
`tags` list on each row (inside `extra_info` where a format has one), and in jsonl the manifest's `tags`
({puzzle id: tags}), so the records stay byte for byte the set's.
The list of formats is mvp_core/export/formats.py FORMATS."""
from __future__ import annotations

import json
import shutil
from pathlib import Path

from sqlalchemy.orm import Session

from db.review.tags import puzzle_tags
from db.sets.importer import MANIFEST, RECORDS, copy_frames
from db.sets.curated import get_set, set_lines, set_summary, write_lines
from mvp_core.errors import UserError
from mvp_core.export.card import card
from mvp_core.export.formats import (BUILDERS, FORMATS, llamafactory_info, problem_text, split_name,
                                     storyboard_uri)
from mvp_core.export.storyboard import render


def _prepare_out(out: Path) -> Path:
    out = Path(out)
    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        raise UserError(f"{out} exists and is not an empty directory")
    out.mkdir(parents=True, exist_ok=True)
    return out


def export_set(session: Session, name: str, fmt: str, out: Path, data_dir: Path, license: str = "other") -> dict:
    """Write set `name` as `fmt` into the empty folder `out`, with its dataset card (`license`: the
    card's license field)."""
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
    counts = split_counts(records)
    if fmt == "jsonl":
        write_lines(lines, out / RECORDS)
        manifest = {**set_summary(cs), "created_at": cs.created_at.isoformat(), "format": "mvp-jsonl/1",
                    "splits": counts, "tags": tags}
        (out / MANIFEST).write_text(json.dumps(manifest, indent=2, sort_keys=True))
        copy_frames(records, data_dir, out)
        files, features = {}, None     # the studio's own snapshot: `mvp import` reads it, not `datasets`
    elif fmt == "hf":
        files, features = _export_hf(records, data_dir, out, tags)
    else:
        files, features = _export_rows(fmt, records, data_dir, out, cs.content_hash, tags)
    made = {"min_distractors": cs.min_distractors, "n_excluded": cs.n_excluded, "params": cs.params,
            "frozen_at": cs.created_at.isoformat()}
    (out / "README.md").write_text(card(name=cs.name, fmt=fmt, content_hash=cs.content_hash, data_files=files,
                                        features=features, counts=counts, made=made, license=license))
    return {"name": cs.name, "format": fmt, "out": str(out), "n_puzzles": len(records),
            "content_hash": cs.content_hash}


def split_counts(records: list[dict]) -> dict[str, dict[str, int]]:
    """{split: {"puzzles": n, "videos": n}}."""
    out: dict[str, dict[str, int]] = {}
    videos: dict[str, set] = {}
    for r in records:
        k = split_name(r)
        out.setdefault(k, {"puzzles": 0, "videos": 0})["puzzles"] += 1
        videos.setdefault(k, set()).add(r["video"]["id"])
    for k, v in videos.items():
        out[k]["videos"] = len(v)
    return out


def _features_yaml(features) -> list:
    # The card's `dataset_info.features` list as `datasets` writes it into the cards it pushes (it
    # has no public call for it); load_dataset(OUT) casts the files to these features.
    from datasets import DatasetInfo
    return DatasetInfo(features=features)._to_yaml_dict()["features"]


def _inferred_features(rows: list[dict]) -> list:
    import pyarrow as pa
    from datasets import Features
    return _features_yaml(Features.from_arrow_schema(pa.Table.from_pylist(rows).schema))


def _export_hf(records: list[dict], data_dir: Path, out: Path, tags: dict[str, list[str]]) -> tuple[dict, list]:
    from datasets import Dataset, Features, Image, List, Value

    def img(uri):   # embedded bytes: the parquet file is self-contained
        return {"bytes": (data_dir / uri).read_bytes(), "path": Path(uri).name}
    rows: dict[str, list[dict]] = {}
    for r in records:
        s, m = r["mask"]["start"], r["mask"]["length"]
        split = split_name(r)
        rows.setdefault(split, []).append({
            "id": r["id"], "video_id": r["video"]["id"], "split": split, "problem": problem_text(r),
            "context_before": [img(f["uri"]) for f in r["frames"][:s]],
            "context_after": [img(f["uri"]) for f in r["frames"][s + m:]],
            "options": [img(o["uri"]) for o in r["options"]],
            "option_labels": [o["label"] for o in r["options"]],
            "option_kinds": [o["kind"] for o in r["options"]],
            "answer": list(r["answer"]), "record": json.dumps(r, sort_keys=True),
            "tags": tags.get(r["id"], [])})
    feats = Features({"id": Value("string"), "video_id": Value("string"), "split": Value("string"),
                      "problem": Value("string"),
                      "context_before": List(Image()), "context_after": List(Image()),
                      "options": List(Image()), "option_labels": List(Value("string")),
                      "option_kinds": List(Value("string")), "answer": List(Value("string")),
                      "record": Value("string"), "tags": List(Value("string"))})
    (out / "data").mkdir()
    for split, split_rows in rows.items():
        Dataset.from_list(split_rows, features=feats).to_parquet(str(out / "data" / f"{split}-00000-of-00001.parquet"))
    return {k: f"data/{k}-*.parquet" for k in rows}, _features_yaml(feats)


def _with_tags(row: dict, tags: list[str]) -> dict:
    (row["extra_info"] if isinstance(row.get("extra_info"), dict) else row)["tags"] = tags
    return row


def _export_rows(fmt: str, records: list[dict], data_dir: Path, out: Path, chash: str,
                 tags: dict[str, list[str]]) -> tuple[dict, list]:
    """The engine formats; (split -> file, the rows' features) for the card."""
    if fmt == "video-r1":       # one storyboard per puzzle; the frames themselves are not needed
        (out / "storyboards").mkdir()
        for r in records:
            render(r, data_dir)[0].save(out / storyboard_uri(r), quality=90)
    else:
        copy_frames(records, data_dir, out)
    rows: dict[str, list[dict]] = {}
    for i, r in enumerate(records):
        rows.setdefault(split_name(r), []).append(
            _with_tags(BUILDERS[fmt](r, i, chash, lambda u: f"./{u}"), tags.get(r["id"], [])))
    if fmt in ("video-r1", "llamafactory"):
        files = {split: f"{split}.json" for split in rows}
        for split, split_rows in rows.items():
            (out / files[split]).write_text(json.dumps(split_rows, indent=1, ensure_ascii=False))
        if fmt == "llamafactory":
            (out / "dataset_info.json").write_text(json.dumps(llamafactory_info(files), indent=2))
    else:
        import pyarrow as pa
        import pyarrow.parquet as pq
        folder = "data/" if fmt == "easyr1" else ""     # EasyR1's DIR@split reads a folder of parquet files only
        files = {split: f"{folder}{split}.parquet" for split in rows}
        (out / folder).mkdir(exist_ok=True)
        for split, split_rows in rows.items():
            pq.write_table(pa.Table.from_pylist(split_rows), out / files[split])
    return files, _inferred_features([x for v in rows.values() for x in v])

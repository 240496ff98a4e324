"""`mvp export`: a frozen set as jsonl (+ frames), a Hugging Face datasets folder, or Video-R1 JSON.

- jsonl:    OUT/puzzles.jsonl (the set's canonical records, byte for byte: its sha256 is the set's
            content hash), OUT/set.json (manifest), and every frame the records name at OUT/<uri>.
            This is the snapshot `mvp train` reads and `mvp import` takes back.
- hf:       OUT/data/<split>-00000-of-00001.parquet per split with the images embedded (datasets'
            Image feature) and OUT/README.md; `datasets.load_dataset(OUT)` gives the set's splits
            (train / val / test, by video) with PIL images. Records of a set frozen before splits
            existed go to "train".
- video-r1: OUT/<name>.json, a list in Video-R1's fields (problem_id, problem, data_type,
            problem_type, options, solution, path) plus the frame paths; frames and source videos
            copied under OUT so `path` resolves relative to OUT; each item has its `split`.
Every format carries each puzzle's split (in jsonl it is the record's `split` field)."""
from __future__ import annotations

import json
import shutil
from pathlib import Path

from sqlalchemy.orm import Session

from db.sets.importer import MANIFEST, RECORDS, copy_frames
from db.sets.curated import get_set, set_lines, set_summary, write_lines
from mvp_core.errors import UserError

FORMATS = ("jsonl", "hf", "video-r1")


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
                    "splits": split_counts(records)}
        (out / MANIFEST).write_text(json.dumps(manifest, indent=2, sort_keys=True))
        copy_frames(records, data_dir, out)
    elif fmt == "hf":
        _export_hf(records, data_dir, out, cs.name, cs.content_hash)
    else:
        _export_video_r1(records, data_dir, out, cs.name)
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


def _export_hf(records: list[dict], data_dir: Path, out: Path, name: str, chash: str) -> None:
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
            "answer": list(r["answer"]), "record": json.dumps(r, sort_keys=True)})
    feats = Features({"id": Value("string"), "video_id": Value("string"), "split": Value("string"),
                      "problem": Value("string"),
                      "context_before": List(Image()), "context_after": List(Image()),
                      "options": List(Image()), "option_labels": List(Value("string")),
                      "option_kinds": List(Value("string")), "answer": List(Value("string")),
                      "record": Value("string")})
    (out / "data").mkdir()
    for split, split_rows in rows.items():
        Dataset.from_list(split_rows, features=feats).to_parquet(str(out / "data" / f"{split}-00000-of-00001.parquet"))
    configs = "".join(f"  - split: {k}\n    path: data/{k}-*.parquet\n" for k in rows)
    (out / "README.md").write_text(
        f"---\nconfigs:\n- config_name: default\n  data_files:\n{configs}"
        f"---\n# MVP set `{name}`\n\nMasked Video Prediction puzzles, content hash `{chash}`. "
        f"Splits are by video (no video in two splits). `record` holds the full puzzle record "
        f"(docs/ARCHITECTURE.md, \"Puzzle record\").\n")


def _export_video_r1(records: list[dict], data_dir: Path, out: Path, name: str) -> None:
    copy_frames(records, data_dir, out)
    items = []
    for r in records:
        src = Path(r["video"]["path"])
        path = ""
        if src.is_file():
            dst = out / "videos" / f"{r['video']['id']}{src.suffix.lower() or '.mp4'}"
            if not dst.exists():
                dst.parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(src, dst)
            path = str(dst.relative_to(out))
        items.append({
            "problem_id": r["id"], "split": r.get("split", "train"), "problem": problem_text(r), "data_type": "video",
            # Video-R1's reward keys on problem_type; an ordered label list is free-form text.
            "problem_type": "free-form",
            "options": [f"{o['label']}. <image:{o['uri']}>" for o in r["options"]],
            "solution": f"<answer>{', '.join(r['answer'])}</answer>",
            "path": path,
            "frames": [f["uri"] for f in r["frames"]], "mask": r["mask"],
            "option_images": {o["label"]: o["uri"] for o in r["options"]}})
    (out / f"{name}.json").write_text(json.dumps(items, indent=1, ensure_ascii=False))

"""The puzzle record (docs/ARCHITECTURE.md, "Puzzle record"): one JSON object per line in puzzles.jsonl, the same fields in the DB.

Records are plain dicts on the wire; these dataclasses give them names and a canonical JSON form
(sorted keys, no whitespace) so the same inputs and seed give byte-identical lines."""
from __future__ import annotations

import hashlib
import json
from dataclasses import asdict, dataclass, field
from pathlib import Path

from mvp_core.errors import UserError
from mvp_core.jsonl import read_jsonl

SYNTH_VERSION = "2"  # 2: flat frames, guard against shown frames, overlap control
LABELS = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
RECORD_KEYS = ("id", "frames", "mask", "options", "answer")   # what a trainer needs of a record


@dataclass
class VideoInfo:
    id: str            # sha256 of the file's bytes, first 16 hex digits
    path: str          # the path as given on the command line (for display; not part of the id)
    sha256: str
    fps: float         # native (average) frame rate
    duration_s: float
    width: int         # display width, after rotation
    height: int


@dataclass
class Frame:
    t: float           # seconds from the start of the video
    uri: str           # relative to the data directory


@dataclass
class Mask:
    start: int         # index into frames of the first masked frame
    length: int        # m, the number of masked (target) frames


@dataclass
class Option:
    label: str
    uri: str
    t: float
    source_video_id: str
    kind: str          # "target" | "neighbor" | "neighbor_widened" | "cross_video" | "random"
    difficulty: float  # max cosine similarity to any target in [0, 1]; 1.0 for targets


@dataclass
class Puzzle:
    id: str
    video: VideoInfo
    frames: list[Frame]
    mask: Mask
    options: list[Option]
    answer: list[str]
    params: dict = field(default_factory=dict)
    sample_fps: float = 0.0      # the rate actually used (may exceed params.fps for short videos)

    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: dict) -> "Puzzle":
        why = record_problem(d)
        if why:
            raise ValueError(why)
        return cls(
            id=d["id"],
            video=VideoInfo(**d["video"]),
            frames=[Frame(**f) for f in d["frames"]],
            mask=Mask(**d["mask"]),
            options=[Option(**o) for o in d["options"]],
            answer=list(d["answer"]),
            params=dict(d.get("params", {})),
            sample_fps=float(d.get("sample_fps", 0.0)),
        )

    @property
    def targets(self) -> list[Frame]:
        return self.frames[self.mask.start:self.mask.start + self.mask.length]

    @property
    def context_before(self) -> list[Frame]:
        return self.frames[:self.mask.start]

    @property
    def context_after(self) -> list[Frame]:
        return self.frames[self.mask.start + self.mask.length:]


def canonical_json(obj) -> str:
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def stable_id(*parts) -> str:
    """Short deterministic id from any JSON-able parts."""
    return hashlib.sha256(canonical_json(parts).encode()).hexdigest()[:20]


def _number(x) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool) and x == x and abs(x) != float("inf")


def record_problem(d) -> str | None:
    """Why a puzzle record cannot be a puzzle, or None. The one check of a record's own consistency
    (files users hand in: puzzles.jsonl, set exports): keys and types, the mask inside the frames,
    unique option labels, and an answer of mask-length labels among the options, none repeated.
    Without it a record whose answer names no option is scored 0 for every answer, silently."""
    if not isinstance(d, dict):
        return f"not a JSON puzzle record (a {type(d).__name__}, not an object)"
    missing = [k for k in RECORD_KEYS if k not in d]
    if missing:
        return f"puzzle record lacks {', '.join(missing)}"
    if not isinstance(d["id"], str) or not d["id"]:
        return f"id must be text, not {d['id']!r}"
    frames, mask, options, answer = d["frames"], d["mask"], d["options"], d["answer"]
    if not isinstance(frames, list) or not all(
            isinstance(f, dict) and _number(f.get("t")) and isinstance(f.get("uri"), str) for f in frames):
        return "frames must be a list of {t: seconds, uri: text}"
    if not isinstance(options, list) or not all(
            isinstance(o, dict) and isinstance(o.get("label"), str) and isinstance(o.get("uri"), str) for o in options):
        return "options must be a list of {label: text, uri: text, ...}"
    if not isinstance(mask, dict) or not all(isinstance(mask.get(k), int) and not isinstance(mask.get(k), bool)
                                             for k in ("start", "length")):
        return "mask must be {start: integer, length: integer}"
    start, length = mask["start"], mask["length"]
    if start < 0 or length < 1 or start + length > len(frames):
        return f"mask {start}+{length} does not fit {len(frames)} frames"
    labels = [o["label"] for o in options]
    if len(set(labels)) != len(labels):
        return f"option labels repeat ({', '.join(labels)})"
    if not isinstance(answer, list) or not all(isinstance(a, str) for a in answer):
        return "answer must be a list of option labels"
    if len(answer) != length or len(set(answer)) != len(answer) or not set(answer) <= set(labels):
        return (f"answer {answer} is not {length} distinct labels of the options "
                f"({', '.join(labels)})")
    return None


def repeated_id(records: list[dict]) -> str | None:
    """The first id two records share, or None. Runs key puzzles by id (the input cache, stored
    answers), so a second puzzle under the same id would silently get the first one's frames."""
    seen = set()
    for rec in records:
        if rec["id"] in seen:
            return rec["id"]
        seen.add(rec["id"])
    return None


def read_puzzles_jsonl(path: str | Path, what: str = "puzzles file", split: str = "") -> list[dict]:
    """The puzzle records of a puzzles.jsonl file, only those of `split` when given (records carry
    `split` when exported from a frozen curated set). A missing file, a line that is not a record
    with RECORD_KEYS, or no records at all is a one-line UserError."""
    out = []
    for n, rec in read_jsonl(path, what, "not a JSON puzzle record"):
        why = record_problem(rec)
        if why:
            raise UserError(f"{path}:{n}: {why}")
        if not split or rec.get("split") == split:
            out.append(rec)
    if not out:
        raise UserError(f"{path} holds no puzzles" + (f" of split {split!r}" if split else ""))
    dup = repeated_id(out)
    if dup is not None:
        raise UserError(f"{path}: puzzle id {dup!r} appears twice")
    return out

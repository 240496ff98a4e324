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

    def to_json(self) -> str:
        return canonical_json(self.to_dict())

    @classmethod
    def from_dict(cls, d: dict) -> "Puzzle":
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


def read_puzzles_jsonl(path: str | Path, what: str = "puzzles file", split: str = "") -> list[dict]:
    """The puzzle records of a puzzles.jsonl file, only those of `split` when given (records carry
    `split` when exported from a frozen curated set). A missing file, a line that is not a record
    with RECORD_KEYS, or no records at all is a one-line UserError."""
    out = []
    for n, rec in read_jsonl(path, what, "not a JSON puzzle record"):
        if not isinstance(rec, dict):
            raise UserError(f"{path}:{n}: not a JSON puzzle record (a {type(rec).__name__}, not an object)")
        missing = set(RECORD_KEYS) - set(rec)
        if missing:
            raise UserError(f"{path}:{n}: puzzle record lacks {', '.join(sorted(missing))}")
        if not split or rec.get("split") == split:
            out.append(rec)
    if not out:
        raise UserError(f"{path} holds no puzzles" + (f" of split {split!r}" if split else ""))
    return out

"""The `mvp synth` settings as documented, validated models.

`SynthConfig` holds everything that changes the puzzles a video gives: its `key()` is part of every
puzzle id, so it must stay the same function of the same values (docs/SYNTHESIS.md). `SynthRunConfig`
holds how the work is run (workers, engine, time limits): it never changes the output, so it is a
model of its own and not part of the key."""
from __future__ import annotations

from typing import Literal

from pydantic import Field, model_validator

from mvp_core.config import DocumentedConfig
from mvp_core.errors import UserError
from mvp_core.puzzle import LABELS, SYNTH_VERSION, stable_id

DEFAULT_STALL_S = 30.0   # no progress report for this long: the decode is hung (generous: a loaded machine)


class SynthConfig(DocumentedConfig):
    fps: float = Field(1.0, gt=0.0, le=120.0, description=(
        "Sampling rate in frames/s; raised up to the native rate for short videos."))
    n: int = Field(8, ge=3, le=len(LABELS), description="N: keyframes per puzzle (context + targets).")
    m: int = Field(3, ge=1, le=len(LABELS), description="Masked (target) frames, a continuous run.")
    l: int = Field(4, ge=1, le=len(LABELS), description="Hard distractors per puzzle.")
    kappa: float | None = Field(None, gt=-1.0, lt=1.0, description=(
        "Near-duplicate cosine threshold; empty = the embedder's calibrated default."))
    per_video: int = Field(3, ge=1, le=10_000, description="K: puzzles per video, from different start times.")
    seed: int = Field(0, ge=0, le=2**63 - 1, description="Seed of the start times, masks and distractor draws.")
    tail: bool = Field(False, description="Allow masking the last m frames (future prediction).")
    adapt: bool = Field(False, description=(
        "When a video gives no puzzle at N and l, try smaller shapes (N down to m + 2, then l down to 2) "
        "with the ambiguity guard unchanged; the puzzle's params record the shape used. Off: the skip "
        "reason names the shape that would admit the video."))
    hardness: Literal["hard", "random"] = Field("hard", description=(
        "Distractor choice: hard (the most similar allowed neighbours) or random (uniform from the video)."))
    embedder: str = Field("pixel", description="Frame embedder: 'pixel' or 'clip:/local/clip/dir'.")
    max_side: int = Field(640, ge=16, le=8192, description="Stored frames are resized so the longest side "
                                                           "is at most this many pixels.")
    neighbourhood: float = Field(0.5, ge=0.0, le=100.0, description=(
        "Distractor window: the sequence's span widened by this fraction on each side."))
    max_overlap: float = Field(0.0, ge=0.0, le=1.0, description=(
        "Share of a puzzle's m targets that may repeat frames of another puzzle of the same video."))
    cross_video: int = Field(0, ge=0, le=len(LABELS), description=(
        "Extra distractors per puzzle from other videos of the run (kind cross_video)."))

    @model_validator(mode="after")
    def _room_for_the_gap(self):
        if self.m > self.n - (1 if self.tail else 2):
            raise UserError(f"m={self.m} leaves no context around the gap with N={self.n}")
        if self.m + self.l > len(LABELS):
            raise UserError(f"l must be >= 1 and m + l <= {len(LABELS)}")
        if self.m + self.l + self.cross_video > len(LABELS):
            raise UserError(f"cross-video must be >= 0 and m + l + cross-video <= {len(LABELS)}")
        return self

    def key(self) -> str:
        """Everything that changes the output; part of every puzzle id."""
        d = self.model_dump()
        if not d["adapt"]:   # off (the default) keeps the keys, and so the puzzle ids, of stores made before it
            del d["adapt"]
        d["synth_version"] = SYNTH_VERSION
        return stable_id(d)

    def validate(self) -> None:
        """Kept for callers of the dataclass era: a SynthConfig is validated when built."""



class SynthRunConfig(DocumentedConfig):
    """How `mvp synth` runs; the keys are the CLI flags' names (--stall-timeout is stall_timeout)."""
    workers: int = Field(1, ge=1, le=1024, description="Worker processes (or Ray tasks in flight) at once.")
    engine: Literal["local", "ray"] = Field("local", description=(
        "local: worker processes on this machine; ray: Ray tasks (data directory on shared storage)."))
    ray_address: str | None = Field(None, description=(
        "--engine ray: connect to this Ray cluster; empty = start Ray on this machine."))
    timeout: float | None = Field(None, gt=0.0, le=7 * 86400.0, description=(
        "Fixed time limit per video in seconds; empty = follows each video's probed duration."))
    stall_timeout: float = Field(DEFAULT_STALL_S, gt=0.0, le=86400.0, description=(
        "Kill a worker that reports no decoding progress for this many seconds (local engine)."))
    retry_failed: bool = Field(False, description="Retry files an earlier run skipped.")

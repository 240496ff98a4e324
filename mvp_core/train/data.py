"""The curated-set snapshot a run trains on, and which puzzles each step sees.

The order is a pure function of (seed, step): global sample k of the run is puzzle
perm(epoch)[k % n] with epoch = k // n and perm a seeded permutation per epoch. A resumed run
therefore sees exactly the puzzles the uninterrupted run would have, without saving a cursor."""
from __future__ import annotations

from collections import OrderedDict
from pathlib import Path

import numpy as np

from mvp_core.errors import UserError
from mvp_core.train.config import GRPOConfig
from mvp_core.train.rundir import file_sha256
from mvp_core.puzzle import read_puzzles_jsonl

# Encoded puzzles kept in memory, by size: a set that fits is decoded and resized once per run, not
# once per epoch (an SFT step of the learning proof spends ~20% of its time re-encoding a puzzle that
# fell out of a 256-puzzle cache: docs/BENCHMARKS.md, "Learning proof"); 2 GiB holds ~4,500 of its
# puzzles, or ~25 of 16 full-size video frames.
INPUT_CACHE_BYTES = 2 << 30


class PuzzleSet:
    def __init__(self, records: list[dict], cfg: GRPOConfig, path: Path, data_dir: Path, sha256: str):
        self.records, self.cfg, self.path, self.data_dir, self.sha256 = records, cfg, path, data_dir, sha256
        self._cache: OrderedDict = OrderedDict()      # id -> (encoded inputs, bytes), least recent first
        self._cache_bytes = 0
        self._store = None

    @classmethod
    def open(cls, cfg: GRPOConfig) -> "PuzzleSet":
        if not cfg.puzzles:
            raise UserError("puzzles: no curated-set file given (puzzles=PATH/puzzles.jsonl)")
        path = Path(cfg.puzzles)
        records = read_puzzles_jsonl(path)
        data_dir = Path(cfg.data_dir) if cfg.data_dir else path.parent
        if not data_dir.is_dir():
            raise UserError(f"data_dir {data_dir} is not a directory")
        return cls(records, cfg, path, data_dir, file_sha256(path))

    def __len__(self) -> int:
        return len(self.records)

    @property
    def set_name(self) -> str:
        return self.cfg.set_name or self.path.parent.name or self.path.stem

    # ---- order -------------------------------------------------------------------------------
    def puzzles_per_step(self, world: int) -> int:
        return self.cfg.completions_per_process * world // self.cfg.num_generations

    def _perm(self, epoch: int) -> np.ndarray:
        return np.random.default_rng([self.cfg.seed, epoch]).permutation(len(self.records))

    def puzzles_for_step(self, step: int, rank: int, world: int) -> list[dict]:
        """This rank's share (whole groups) of step `step`'s puzzles (0-based step)."""
        P = self.puzzles_per_step(world)
        per_rank = P // world
        out = []
        for j in range(rank * per_rank, (rank + 1) * per_rank):
            k = step * P + j
            out.append(self.records[int(self._perm(k // len(self.records))[k % len(self.records)])])
        return out

    def epoch_of(self, steps_done: int, world: int) -> float:
        return steps_done * self.puzzles_per_step(world) / len(self.records)

    # ---- model inputs ------------------------------------------------------------------------
    def encode(self, record: dict, processor, max_bytes: int = INPUT_CACHE_BYTES) -> dict:
        """Processor outputs for one puzzle (batch of 1), cached up to max_bytes (least recently
        used out first): frames are decoded and resized once per puzzle, not once per epoch."""
        hit = self._cache.get(record["id"])
        if hit is not None:
            self._cache.move_to_end(record["id"])
            return hit[0]
        from mvp_core.model.prompt import PromptConfig, build_inputs
        from mvp_core.video.frames import FrameStore
        if self._store is None:
            self._store = FrameStore(self.data_dir)
        pcfg = PromptConfig(video_mode=self.cfg.video_mode, max_pixels=self.cfg.max_pixels or None)
        try:
            enc = dict(build_inputs(processor, record, self._store.load, pcfg))
        except (OSError, ValueError) as e:
            raise UserError(f"puzzle {record['id']}: cannot build model inputs ({str(e).splitlines()[0]})") from None
        size = sum(v.numel() * v.element_size() for v in enc.values() if hasattr(v, "element_size"))
        self._cache[record["id"]] = (enc, size)
        self._cache_bytes += size
        while self._cache_bytes > max_bytes and len(self._cache) > 1:
            self._cache_bytes -= self._cache.popitem(last=False)[1][1]
        return enc

    def config_yaml(self, cfg: GRPOConfig, world: int, kind: str = "grpo") -> str:
        """config.yaml of a run: the config (through its model, never edited as text) and `run_info`:
        the trainer (grpo / sft), the set's name, file, hash and size, processes, puzzles per step."""
        info = {"kind": kind, "set": {"name": self.set_name, "file": str(self.path), "sha256": self.sha256,
                        "n_puzzles": len(self.records)},
                "world_size": world, "puzzles_per_step": self.puzzles_per_step(world)}
        return cfg.to_yaml({"run_info": info})

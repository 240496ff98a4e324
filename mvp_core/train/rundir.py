"""The run directory (docs/ARCHITECTURE.md, "Run directory"): everything a run leaves behind, in plain files.

    config.yaml          the resolved GRPOConfig + the curated set's name, content hash and size
    metrics.jsonl        one JSON object per optimizer step (METRIC_FIELDS)
    completions/         step_000001.parquet ...: one row per sampled completion
    checkpoints/         step_000010/ ...: loadable model + optimizer/scheduler/RNG/trainer state
    stdout.log           the trainer's log lines
    status.json          state (running/finished/stopped/failed), pid, step: what the UI reads

Only process rank 0 writes here (the caller checks); the app reads these files to display a run."""
from __future__ import annotations

import hashlib
import json
import time
from pathlib import Path

from mvp_core.atomic import atomic_path, atomic_write_text
from mvp_core.errors import UserError

# metrics.jsonl fields (docs/ARCHITECTURE.md, "Run directory"), in the order they are written.
METRIC_FIELDS = (
    "step", "reward", "reward_std", "reward/format", "reward/selection", "reward/order", "reward/exact",
    "frac_reward_zero_std", "completion_length", "clip_ratio/low", "clip_ratio/high", "clip_ratio/region",
    "kl", "entropy", "loss", "grad_norm", "lr", "step_s", "samples_per_s", "tokens_per_s",
    "time/generate_s", "time/score_s", "time/logprob_s", "time/backward_s", "time/optimizer_s", "time/other_s",
    "epoch", "time", "sampler/non_policy",
    "reward_std_batch", "completion_length/min", "completion_length/max", "clipped_ratio",
    "terminated_length/mean", "terminated_length/min", "terminated_length/max", "step_tokens", "num_tokens",
)


def file_sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


class RunDir:
    def __init__(self, path: str | Path):
        self.path = Path(path)
        self.checkpoints = self.path / "checkpoints"
        self.completions = self.path / "completions"
        self.metrics_file = self.path / "metrics.jsonl"
        self.config_file = self.path / "config.yaml"
        self.log_file = self.path / "stdout.log"
        self.status_file = self.path / "status.json"

    def create(self, resume: bool) -> None:
        """Make the directory. A fresh run refuses a directory that already holds a run, so
        nothing is overwritten by accident; --resume needs one."""
        has_run = self.config_file.exists()
        if resume and not has_run:
            raise UserError(f"--resume: {self.path} holds no run to resume")
        if not resume and has_run:
            raise UserError(f"{self.path} already holds a run; pass --resume or choose another output_dir")
        self.path.mkdir(parents=True, exist_ok=True)
        self.checkpoints.mkdir(exist_ok=True)
        self.completions.mkdir(exist_ok=True)

    # ---- config ------------------------------------------------------------------------------
    def write_config(self, text: str) -> None:
        atomic_write(self.config_file, text)

    # ---- logs and metrics ----------------------------------------------------------------------
    def log(self, line: str) -> None:
        stamp = time.strftime("%Y-%m-%d %H:%M:%S")
        with open(self.log_file, "a") as f:
            f.write(f"[{stamp}] {line}\n")

    def append_metrics(self, row: dict) -> None:
        with open(self.metrics_file, "a") as f:
            f.write(json.dumps(row, allow_nan=False, default=float) + "\n")
            f.flush()

    def truncate_metrics(self, last_step: int) -> None:
        """On resume, drop metric lines written after the checkpoint (the steps are redone)."""
        rows = read_metrics(self.path)
        keep = [r for r in rows if isinstance(r.get("step", 0), int) and r.get("step", 0) <= last_step]
        atomic_write(self.metrics_file, "".join(json.dumps(r) + "\n" for r in keep))
        for p in self.completions.glob("step_*.parquet"):
            step = step_of(p.stem)
            if step is not None and step > last_step:
                p.unlink()

    def write_completions(self, step: int, rows: list[dict]) -> None:
        """completions/step_N.parquet: rows of the one scored-completion schema plus step and rank."""
        import pyarrow as pa
        import pyarrow.parquet as pq

        from mvp_core.model.rollout import SCORED_COMPLETION, TRAINING_COLUMNS, arrow_schema
        if not rows:
            return
        columns = SCORED_COMPLETION + TRAINING_COLUMNS
        table = pa.Table.from_pylist([{k: r.get(k) for k, _ in columns} for r in rows], schema=arrow_schema(columns))
        with atomic_path(self.completions / f"step_{step:06d}.parquet") as tmp:
            pq.write_table(table, tmp)

    def write_status(self, **fields) -> None:
        cur = read_status(self.path)
        cur.update(fields, updated=time.time())
        atomic_write(self.status_file, json.dumps(cur))

    # ---- checkpoints ---------------------------------------------------------------------------
    def checkpoint_dir(self, step: int) -> Path:
        return self.checkpoints / f"step_{step:06d}"

    def list_checkpoints(self) -> list[tuple[int, Path]]:
        """Completed checkpoints (a `trainer_state.json` is written last), oldest first."""
        out = []
        if self.checkpoints.is_dir():
            for p in self.checkpoints.iterdir():
                step = step_of(p.name)     # not step_000010.tmp: a save killed before its rename
                if step is not None and p.is_dir() and (p / "trainer_state.json").is_file():
                    out.append((step, p))
        return sorted(out)

    def latest_checkpoint(self) -> tuple[int, Path] | None:
        cps = self.list_checkpoints()
        return cps[-1] if cps else None

    def prune_checkpoints(self, keep: int) -> None:
        import shutil
        if keep <= 0:
            return
        for _, p in self.list_checkpoints()[:-keep]:
            shutil.rmtree(p, ignore_errors=True)


def step_of(name: str) -> int | None:
    """N of a name `step_N` (a checkpoint directory, a completions file's stem); None for any other name."""
    digits = name.removeprefix("step_")
    return int(digits) if name.startswith("step_") and digits.isdigit() and digits.isascii() else None


def read_metrics(path: str | Path) -> list[dict]:
    """metrics.jsonl as a list of dicts; a half-written last line (a run being written) is skipped."""
    f = Path(path) / "metrics.jsonl"
    rows = []
    if f.is_file():
        for line in f.read_text(encoding="utf-8", errors="replace").splitlines():
            try:
                row = json.loads(line)
            except (ValueError, RecursionError):     # torn, garbage, or absurdly nested
                continue
            if isinstance(row, dict):
                rows.append(row)
    return rows


def read_status(path: str | Path) -> dict:
    """status.json as a dict; {} when missing, torn, or not a JSON object (the UI shows "created")."""
    f = Path(path) / "status.json"
    try:
        status = json.loads(f.read_text(encoding="utf-8"))
    except (OSError, ValueError, RecursionError):
        return {}
    return status if isinstance(status, dict) else {}


atomic_write = atomic_write_text     # the one atomic write (mvp_core/atomic.py), under its old name here

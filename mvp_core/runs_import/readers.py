"""Read the generations another engine logged, one `Generation` each.

- verl: `trainer.validation_data_dir=DIR` writes DIR/<step>.jsonl, one JSON object per answer with
  `input` (the decoded prompt), `output` (the decoded answer), `gts` (the row's ground truth), `score`,
  `step`, plus every extra key the reward function returned (mvp_core/export/logged_reward.py returns
  `puzzle_id`). Older verl writes no `gts`.
- easyr1: EasyR1 logs each validation answer as (input, output, label, score) at a step
  (`RayPPOTrainer._maybe_log_val_generations`); a JSONL file of objects with those keys and `step`.
- trl: `GRPOTrainer(args=GRPOConfig(log_completions=True))` writes OUTPUT_DIR/completions/
  completions_<step>.parquet with columns step, prompt, completion, one per reward function, the
  extra columns reward functions logged (`log_extra`: logged_reward.mvp_reward logs `puzzle_id`),
  and advantage.

A path is a file or a folder of such files (a TRL output folder: its completions/ folder). A file
that is not what the engine writes is one line naming the file (and line) and what was missing."""
from __future__ import annotations

import math
import re
from dataclasses import dataclass
from pathlib import Path

from mvp_core.errors import UserError

# engine -> what `mvp import-run --engine` reads (the CLI help and docs/scale.md say the same)
ENGINES: dict[str, str] = {
    "verl": "verl validation dumps: DIR/<step>.jsonl of trainer.validation_data_dir (input, output, gts, score, step)",
    "easyr1": "EasyR1 validation generations as JSONL (input, output, label, score, step)",
    "trl": "TRL GRPOTrainer completions: OUTPUT_DIR/completions/completions_<step>.parquet (log_completions=True)",
}


@dataclass
class Generation:
    source: str                    # "FILE:LINE" or "FILE row N", for messages
    step: int
    completion: str
    prompt: str | None = None      # the prompt's text as logged (image tokens dropped)
    ground_truth: object = None    # the row's ground truth as logged (verl gts, EasyR1 label)
    puzzle_id: str | None = None   # when the reward function logged it
    score: float | None = None     # the engine's own score, compared with the project's reward
    advantage: float | None = None
    file: str = ""                 # the file it came from


def read_generations(engine: str, paths: list[str | Path]) -> list[Generation]:
    if engine not in ENGINES:
        raise UserError(f"engine must be one of {', '.join(ENGINES)}, not {engine!r}")
    files: list[Path] = []
    for p in map(Path, paths):
        files += _files(engine, p)
    out: list[Generation] = []
    for f in files:
        out += _read_trl(f) if engine == "trl" else _read_jsonl(engine, f)
    if not out:
        raise UserError(f"{', '.join(map(str, paths))}: no generations in it")
    return out


def _files(engine: str, p: Path) -> list[Path]:
    if p.is_file():
        return [p]
    if not p.is_dir():
        raise UserError(f"generations {p} does not exist")
    if engine == "trl" and (p / "completions").is_dir():
        p = p / "completions"
    ext = "*.parquet" if engine == "trl" else "*.jsonl"
    found = sorted(p.glob(ext), key=lambda f: (_step_in(f.stem) or 0, f.name))
    if not found:
        raise UserError(f"{p} holds no {ext} files ({ENGINES[engine]})")
    return found


def _step_in(stem: str) -> int | None:
    m = re.search(r"(\d+)$", stem)
    return int(m.group(1)) if m else None


def _number(v, where: str, key: str) -> float | None:
    if v is None:
        return None
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
        raise UserError(f"{where}: {key} is {v!r}, not a number")
    return float(v)


def _step(v, where: str) -> int:
    if isinstance(v, bool) or not isinstance(v, (int, float)) or v != int(v) or v < 0:
        raise UserError(f"{where}: step is {v!r}, not a step number")
    return int(v)


def _read_jsonl(engine: str, f: Path) -> list[Generation]:
    from mvp_core.jsonl import read_jsonl
    gt_key = "label" if engine == "easyr1" else "gts"
    need = "input, output, label, score, step" if engine == "easyr1" else "input, output, gts, score, step"
    out = []
    for n, row in read_jsonl(f, f"{engine} generations file", not_json=f"not a {engine} generation line"):
        where = f"{f}:{n}"
        if not isinstance(row, dict) or not isinstance(row.get("output"), str):
            raise UserError(f"{where}: not a {engine} generation line (a JSON object with {need})")
        step = row.get("step", _step_in(f.stem))
        if step is None:
            raise UserError(f"{where}: no step (the line has no 'step' and the file name no step number)")
        extra = row.get("extra_info") if isinstance(row.get("extra_info"), dict) else {}
        pid = row.get("puzzle_id", extra.get("puzzle_id"))
        prompt = row.get("input")
        out.append(Generation(where, _step(step, where), row["output"],
                              prompt=prompt if isinstance(prompt, str) else None,
                              ground_truth=row.get(gt_key, row.get("ground_truth")),
                              puzzle_id=str(pid) if pid else None, score=_number(row.get("score"), where, "score"),
                              file=str(f.resolve())))
    return out


def _text(content) -> str:
    """The text of a chat message's content: a string, or the text parts of a part list."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(p.get("text") or "" for p in content if isinstance(p, dict) and p.get("type") == "text")
    return ""


def _prompt_text(prompt) -> str | None:
    if isinstance(prompt, str):
        return prompt
    if isinstance(prompt, list):
        return "\n".join(_text(m.get("content")) for m in prompt if isinstance(m, dict) and m.get("role") != "system")
    return None


def completion_text(completion) -> str | None:
    """A completion as TRL gives it (text, or chat messages whose last one is the answer)."""
    if isinstance(completion, str):
        return completion
    if isinstance(completion, list) and completion and isinstance(completion[-1], dict):
        return _text(completion[-1].get("content"))
    return None


def _read_trl(f: Path) -> list[Generation]:
    import pyarrow as pa
    import pyarrow.parquet as pq
    try:
        table = pq.read_table(f)
    except (pa.ArrowException, OSError) as e:
        raise UserError(f"{f}: not a TRL completions table ({str(e).splitlines()[0]})") from None
    missing = [k for k in ("step", "prompt", "completion") if k not in table.column_names]
    if missing:
        raise UserError(f"{f}: not a TRL completions table (no column {', '.join(missing)})")
    out = []
    for i, row in enumerate(table.to_pylist()):
        where = f"{f} row {i}"
        text = completion_text(row["completion"])
        if text is None:
            raise UserError(f"{where}: completion is neither text nor chat messages")
        pid = row.get("puzzle_id")
        out.append(Generation(where, _step(row["step"], where), text, prompt=_prompt_text(row["prompt"]),
                              puzzle_id=str(pid) if pid else None,
                              score=_number(row.get("mvp_reward"), where, "mvp_reward"),
                              advantage=_number(row.get("advantage"), where, "advantage"), file=str(f.resolve())))
    return out

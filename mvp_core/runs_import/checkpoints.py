"""An engine's checkpoint as a model `mvp eval` can load: a Hugging Face folder (config.json and the
weights), and the training step it was saved at.

Where each engine puts it: TRL (HF Trainer) OUTPUT_DIR/checkpoint-<step>/ (trainer_state.json holds
global_step); verl and EasyR1 CKPT_DIR/global_step_<step>/actor/ holds FSDP shards, and
`python -m verl.model_merger merge --backend fsdp --local_dir .../actor --target_dir .../actor/huggingface`
(EasyR1: `python3 scripts/model_merger.py --local_dir .../actor`) writes the HF folder this takes."""
from __future__ import annotations

import json
import re
from pathlib import Path

from mvp_core.errors import UserError

_STEP_NAME = re.compile(r"^(?:global_step|checkpoint|step)[_-](\d+)$")
WEIGHTS = ("*.safetensors", "pytorch_model*.bin")


def check_hf_folder(path: str | Path) -> Path:
    p = Path(path)
    if not p.is_dir():
        raise UserError(f"checkpoint {p} is not a folder")
    if not (p / "config.json").is_file() or not any(next(p.glob(w), None) for w in WEIGHTS):
        raise UserError(f"checkpoint {p} is not a Hugging Face model folder (config.json and *.safetensors); "
                        f"merge verl/EasyR1 FSDP shards into one first (docs/scale.md)")
    return p.resolve()


def checkpoint_step(path: str | Path) -> int:
    """The step from the folder's name or a parent's (checkpoint-N, global_step_N, step_N), else
    trainer_state.json's global_step."""
    p = Path(path).resolve()
    for part in [p, *list(p.parents)[:3]]:
        m = _STEP_NAME.match(part.name)
        if m:
            return int(m.group(1))
    state = p / "trainer_state.json"
    if state.is_file():
        try:
            step = json.loads(state.read_text()).get("global_step")
        except (ValueError, OSError, AttributeError):
            step = None
        if isinstance(step, int) and not isinstance(step, bool) and step >= 0:
            return step
    raise UserError(f"checkpoint {p}: no step in its name (checkpoint-N, global_step_N) or trainer_state.json; "
                    f"give it as STEP=DIR")


def parse_checkpoint_arg(text: str) -> tuple[int, Path]:
    """`DIR` (step from the folder) or `STEP=DIR` -> (step, the checked folder)."""
    head, sep, tail = text.partition("=")
    if sep and head.isascii() and head.isdigit():
        return int(head), check_hf_folder(tail)
    folder = check_hf_folder(text)
    return checkpoint_step(folder), folder

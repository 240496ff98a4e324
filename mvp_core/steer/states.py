"""The file `mvp steer collect` writes and `mvp steer train` reads: states, labels and provenance."""
from __future__ import annotations

from pathlib import Path

from mvp_core.errors import UserError

FORMAT = "mvp-steer-states/1"


def save_states(path, states, bad, classes: list[str], items: list[str], groups: list[str],
                model_name: str, extra: dict | None = None) -> Path:
    """`states` [n, layers, hidden] fp32; `bad` [n] bool; per row its class, prompt/puzzle id and group."""
    import torch
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    blob = {"format": FORMAT, "states": states.float().contiguous(), "bad": torch.as_tensor(bad, dtype=torch.bool),
            "classes": list(classes), "items": list(items), "groups": list(groups), "model_name": model_name,
            "extra": extra or {}}
    tmp = path.with_name(f".{path.name}.tmp")
    torch.save(blob, tmp)
    tmp.replace(path)
    return path


def load_states(path) -> dict:
    import torch
    path = Path(path)
    if not path.is_file():
        raise UserError(f"states file {path} does not exist")
    try:
        blob = torch.load(path, map_location="cpu", weights_only=True)
    except Exception as e:  # noqa: BLE001 - any unpickling failure is a bad file
        raise UserError(f"{path} is not a states file ({str(e).splitlines()[0][:120]})") from None
    if not isinstance(blob, dict) or blob.get("format") != FORMAT:
        raise UserError(f"{path} is not a states file written by `mvp steer collect`")
    return blob

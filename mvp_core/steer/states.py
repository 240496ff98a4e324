"""The file `mvp steer collect` writes and `mvp steer train` reads: states, labels and provenance."""
from __future__ import annotations

from pathlib import Path

from mvp_core.steer.tensor_file import load_tensor_file, save_tensor_file

FORMAT = "mvp-steer-states/1"


def save_states(path, states, bad, classes: list[str], items: list[str], groups: list[str],
                model_name: str, extra: dict | None = None, fingerprint: dict | None = None) -> Path:
    """`states` [n, layers, hidden] fp32; `bad` [n] bool; per row its class, prompt/puzzle id and group;
    `fingerprint`: the model's (steer/fingerprint.py), passed on to the bank trained from these states."""
    import torch
    blob = {"format": FORMAT, "states": states.float().contiguous(), "bad": torch.as_tensor(bad, dtype=torch.bool),
            "classes": list(classes), "items": list(items), "groups": list(groups), "model_name": model_name,
            "extra": extra or {}, "fingerprint": fingerprint}
    return save_tensor_file(path, blob)


def load_states(path) -> dict:
    return load_tensor_file(path, FORMAT, "states file", "written by `mvp steer collect`")

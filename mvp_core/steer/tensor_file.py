"""The steering files (collected states, energy banks): one dict of tensors and plain values,
written atomically with torch.save and read back with weights_only=True (no code runs on load),
tagged with a format string so one kind of file is never read as the other."""
from __future__ import annotations

from pathlib import Path

from mvp_core.atomic import atomic_path
from mvp_core.errors import UserError


def save_tensor_file(path, blob: dict) -> Path:
    import torch
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with atomic_path(path) as tmp:      # a crash never leaves half a file
        torch.save(blob, tmp)
    return path


def load_tensor_file(path, fmt: str, what: str, not_this_kind: str) -> dict:
    """The dict saved at `path` with format `fmt`. `what` names the kind ("energy bank"); a
    missing, unreadable or other-format file is a one-line UserError (`not_this_kind` ends that line)."""
    import torch
    path, a_what = Path(path), ("an " if what[:1] in "aeiou" else "a ") + what
    if not path.is_file():
        raise UserError(f"{what} {path} does not exist")
    try:
        blob = torch.load(path, map_location="cpu", weights_only=True)
    except Exception as e:  # noqa: BLE001 - any unpickling failure is a bad file
        raise UserError(f"{path} is not {a_what} ({_reason(e)})") from None
    if not isinstance(blob, dict) or blob.get("format") != fmt:
        raise UserError(f"{path} is not {a_what} {not_this_kind}")
    return blob


# torch's weights-only refusal wraps the reason in paragraphs of advice (to reload with
# weights_only=False, which would run the file's code): keep only the reason.
_BOILERPLATE = ("Weights only load failed", "Please file an issue", "Check the documentation", "Re-running")


def _reason(e: Exception) -> str:
    lines = [x.strip() for x in str(e).splitlines() if x.strip()]
    kept = [x for x in lines if not x.startswith(_BOILERPLATE)]
    text = (kept or lines or [type(e).__name__])[0].removeprefix("WeightsUnpickler error:").strip()
    return (text or type(e).__name__)[:160]

"""Reading JSON Lines files given by users (puzzles, prompts): one place that turns a missing file or
a line that is not JSON into one line naming the file and line number."""
from __future__ import annotations

import json
from pathlib import Path

from mvp_core.errors import UserError


def read_jsonl(path: str | Path, what: str, not_json: str = "not JSON") -> list[tuple[int, object]]:
    """(line number, value) of every non-blank line of `path`. `what` names the file in the error
    when it is missing ("puzzles file"); `not_json` names what a bad line should have been."""
    path = Path(path)
    if not path.is_file():
        raise UserError(f"{what} {path} does not exist")
    rows = []
    for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        try:
            rows.append((n, json.loads(line)))
        except json.JSONDecodeError as e:
            raise UserError(f"{path}:{n}: {not_json} ({e.msg})") from None
    return rows

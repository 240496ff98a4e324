"""Reading text files given by users (puzzles, prompts, configs, exports): one place that turns a
missing file, bytes that are not UTF-8 text, or a line that is not JSON into one line naming the file
(and line number). A UTF-8 byte-order mark, which Windows editors and spreadsheet exports write, is
accepted and dropped."""
from __future__ import annotations

import json
from pathlib import Path

from mvp_core.errors import UserError


def read_user_text(path: str | Path, what: str) -> str:
    """The text of a file a user gave. `what` names it in the error ("puzzles file")."""
    path = Path(path)
    if not path.is_file():
        raise UserError(f"{what} {path} does not exist")
    data = path.read_bytes()
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as e:
        line = data.count(b"\n", 0, e.start) + 1
        raise UserError(f"{path}:{line}: not UTF-8 text (byte 0x{data[e.start]:02x} at offset {e.start}); "
                        f"is this the {what}?") from None


def read_jsonl(path: str | Path, what: str, not_json: str = "not JSON") -> list[tuple[int, object]]:
    """(line number, value) of every non-blank line of `path`. `what` names the file in the error
    when it is missing ("puzzles file"); `not_json` names what a bad line should have been."""
    rows = []
    for n, line in enumerate(read_user_text(path, what).splitlines(), 1):
        if not line.strip():
            continue
        try:
            rows.append((n, json.loads(line)))
        except json.JSONDecodeError as e:
            raise UserError(f"{path}:{n}: {not_json} ({e.msg})") from None
        except ValueError as e:      # an integer of more than 4300 digits
            raise UserError(f"{path}:{n}: {not_json} ({str(e).split(';')[0]})") from None
        except RecursionError:       # [[[[... thousands deep: no record nests like that
            raise UserError(f"{path}:{n}: {not_json} (nested too deeply)") from None
    return rows

"""Puzzles and videos per split of a frozen set, for the pages that show a set's splits (Data's set
table, Train's split pickers, Rollouts' eval and steering-bank forms).

Read by the database's own JSON functions in one grouped query (SQLite's `json_extract`, PostgreSQL's
`jsonb_extract_path_text`), not by parsing every record in Python: `load_set` of a 100,000-puzzle set took 3.4-3.7 s, and the
Rollouts page's load did it three times. A frozen set never changes (docs/store.md), so the summary is
kept per (database, set, content hash): the first page to show a set reads it, the next ones do not.
The newest `KEEP_SETS` summaries are kept (a few counts each; a deleted or never-shown-again set's
entry is dropped once that many newer ones are shown)."""
from __future__ import annotations

import threading
from collections import OrderedDict

from sqlalchemy import func, literal, select
from sqlalchemy.dialects.postgresql import JSONB
from sqlalchemy.orm import Session

from db.models.curation import SetItem
from db.sets.curated import SPLITS, get_set

KEEP_SETS = 512
_KEPT: OrderedDict[tuple, dict[str, dict[str, int]]] = OrderedDict()
_LOCK = threading.Lock()


def split_summary(session: Session, name: str) -> dict[str, dict[str, int]]:
    """{split: {"puzzles": n, "videos": n}} of set `name`, splits as its records carry them, train, val,
    test first; a record without a split (a set frozen before splits) counts under "" (UserError for
    a set that does not exist)."""
    cs = get_set(session, name)
    key = (session.get_bind().url.render_as_string(hide_password=True), cs.id, cs.content_hash)
    with _LOCK:
        kept = _KEPT.get(key)
        if kept is not None:
            _KEPT.move_to_end(key)
    if kept is None:
        kept = _read(session, cs.id)
        with _LOCK:
            _KEPT[key] = kept
            while len(_KEPT) > KEEP_SETS:
                _KEPT.popitem(last=False)
    return {k: dict(v) for k, v in kept.items()}


def _field(session: Session, *path: str):
    """The record's text at `path`, extracted by the database (the record column is text holding JSON)."""
    if session.get_bind().dialect.name == "postgresql":
        return func.jsonb_extract_path_text(SetItem.record_json.cast(JSONB), *map(literal, path))
    return func.json_extract(SetItem.record_json, literal("$." + ".".join(path)))


def _read(session: Session, set_id: int) -> dict[str, dict[str, int]]:
    split, video = _field(session, "split"), _field(session, "video", "id")
    rows = session.execute(select(split, video, func.count()).where(SetItem.set_id == set_id)
                           .group_by(split, video)).all()
    out: dict[str, dict[str, int]] = {}
    for sp, _, n in rows:
        cell = out.setdefault(sp or "", {"puzzles": 0, "videos": 0})
        cell["puzzles"] += n
        cell["videos"] += 1
    order = [k for k in SPLITS if k in out] + sorted(k for k in out if k not in SPLITS)
    return {k: out[k] for k in order}

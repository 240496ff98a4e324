"""Paths the database stores, relative to the data directory: a copied data directory works.

A path inside the data directory is stored relative to it (POSIX, e.g. `runs/r1/checkpoints/step_2`)
and read back joined to the data directory in use; anything else (a path outside it, a Hugging Face
model name, an absolute path another data directory wrote) is stored and read as given; migration
0008 rewrote the absolute paths older versions stored inside the data directory. The conversion lives in the
column type `DataPath` (db/models: run and checkpoint directories, model paths, video and synthesis
file paths), so every write, read and comparison (`Checkpoint.path == p` binds `p` converted too) goes
through `to_stored` / `resolve` without the callers knowing.

The type cannot see the session, only the engine's dialect, so `bind_data_dir` records the data
directory on the engine (db/engine.py `open_db`). An engine without one (a test's bare engine) stores
paths as given."""
from __future__ import annotations

import os
from pathlib import Path, PurePosixPath

from sqlalchemy import Text
from sqlalchemy.engine import Engine
from sqlalchemy.types import TypeDecorator

_ATTR = "mvp_data_dir"


def to_stored(path: str | os.PathLike | None, data_dir: str | os.PathLike | None) -> str | None:
    """`path` relative to `data_dir` when it is an absolute path inside it, else `path` unchanged."""
    if path is None or not data_dir:
        return None if path is None else str(path)
    text = str(path)
    if not os.path.isabs(text):
        return text
    rel = os.path.relpath(os.path.normpath(text), os.path.normpath(str(data_dir)))
    if rel == os.curdir or rel == os.pardir or rel.startswith(os.pardir + os.sep):
        return text          # the data directory itself, or outside it
    return PurePosixPath(*Path(rel).parts).as_posix()


def resolve(stored: str | None, data_dir: str | os.PathLike | None, *, only_existing: bool = False) -> str | None:
    """The path a stored value names, for the data directory in use: a relative value joined to it, an
    absolute one as is. `only_existing`: join only when the result exists (a model path may also be a
    model name such as `org/model`, which is relative too)."""
    if stored is None or not stored or not data_dir or os.path.isabs(stored):
        return stored
    joined = str(Path(data_dir) / stored)
    if only_existing and not os.path.exists(joined):
        return stored
    return joined


def moved_with(path: str, old_anchor: str | os.PathLike, new_anchor: str | os.PathLike) -> str:
    """`path` moved as `old_anchor` moved to `new_anchor`, when `path` is missing where it was and is
    found at the moved place; else `path`. A file that records absolute paths (a run's config.yaml:
    its start model, its own output_dir) is read after its directory was copied: the part the two
    anchors share at their ends is what was copied along, the differing heads say where from and to."""
    if not path or not os.path.isabs(path) or os.path.exists(path):
        return path
    old, new = Path(os.path.normpath(old_anchor)).parts, Path(os.path.normpath(new_anchor)).parts
    n = 0
    while n < min(len(old), len(new)) and old[-1 - n] == new[-1 - n]:
        n += 1
    old_head, new_head = Path(*old[:len(old) - n]), Path(*new[:len(new) - n])
    if n == 0 or not old_head.is_absolute() or not new_head.is_absolute():
        return path
    rel = os.path.relpath(os.path.normpath(path), old_head)
    if rel == os.curdir or rel.startswith(os.pardir):
        return path
    moved = new_head / rel
    return str(moved) if moved.exists() else path


def bind_data_dir(engine: Engine, data_dir: str | os.PathLike) -> None:
    """Make `data_dir` the directory the engine's `DataPath` columns are relative to (one per engine:
    each engine has its own dialect object, shared by `read_engine` and `execution_options` copies)."""
    setattr(engine.dialect, _ATTR, str(Path(data_dir).resolve()))


def engine_data_dir(dialect) -> str | None:
    return getattr(dialect, _ATTR, None)


class DataPath(TypeDecorator):
    """TEXT holding a path, stored relative to the data directory when inside it (module docstring).
    `maybe_name`: the value may also be a model name, so a relative value is joined to the data
    directory only where that path exists."""
    impl = Text
    cache_ok = True

    def __init__(self, maybe_name: bool = False):
        super().__init__()
        self.maybe_name = maybe_name

    def process_bind_param(self, value, dialect):
        return to_stored(value, engine_data_dir(dialect))

    def process_result_value(self, value, dialect):
        return resolve(value, engine_data_dir(dialect), only_existing=self.maybe_name)

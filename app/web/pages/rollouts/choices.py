"""The Rollouts page's pickers: the model versions with answers, a version's videos and a video's
puzzles (db/runs/rollout_views.py), kept per process and read again only when what they read
changed. At 100,000 answers reading them costs about a second and a half of CPU (every answer of the
version is grouped), and the page's load, its view API and the answers table each asked for them.

What they read is stamped by one statement: the answers' last id and count, the checkpoints' last id
and count, and the run fields the versions' names use. The stamp is read on every call, so an
answer, checkpoint or run written before a call is in its choices; nothing is kept for a while."""
from __future__ import annotations

import threading
from collections.abc import Callable

from sqlalchemy import Text, cast, func, select
from sqlalchemy.orm import Session

from db.models.runs import Checkpoint, Rollout, Run
from db.runs import rollout_views as rd

KEEP = 64          # (version, video) puzzle lists kept; a few hundred KB at most
# The puzzle picker lists at most this many of a video's puzzles: at 6,250 a video (100,000 answers) the
# list alone was most of the Rollouts page's load (docs/web.md, "Speed and memory"); the answers table
# below it reaches every puzzle, and a puzzle it opens is added to the list.
PICKER_MAX = 200
PUZZLE_LABEL = "Puzzle (G answers · mean · std)"

_SEP, _ROW = "\x1f", "\x1e"


def _runs_text():
    cols = [Run.id, Run.kind, cast(Run.model_path, Text), cast(Run.dir, Text), Run.name]
    joined = cols[0]
    for c in cols[1:]:
        joined = joined + _SEP + func.coalesce(c, "")
    return select(func.aggregate_strings(joined, _ROW)).scalar_subquery()


# the runs' rows are aggregated in no fixed order: an unchanged table may (rarely) read as changed,
# which costs one more read, never a stale choice
_STAMP = select(select(func.max(Rollout.id)).scalar_subquery(),
                select(func.count()).select_from(Rollout).scalar_subquery(),
                select(func.max(Checkpoint.id)).scalar_subquery(),
                select(func.count()).select_from(Checkpoint).scalar_subquery(),
                _runs_text())


class _Kept:
    def __init__(self):
        self.lock = threading.Lock()
        self.stamp: tuple | None = None
        self.values: dict = {}
        self.computed = 0        # reads of rollout_views (tests count them)

    def get(self, s: Session, key: tuple, compute: Callable):
        stamp = tuple(s.execute(_STAMP).one())
        # one computation at a time: the page's load and its view API arrive together and ask for
        # the same choices; the second finds the first's
        with self.lock:
            if stamp != self.stamp:
                self.values.clear()
                self.stamp = stamp
            if key not in self.values:
                self.values[key] = compute()
                self.computed += 1
                while len(self.values) > KEEP:
                    self.values.pop(next(iter(self.values)))
            return self.values[key]


_kept: dict[str, _Kept] = {}
_kept_lock = threading.Lock()


def _of(s: Session) -> _Kept:
    url = s.get_bind().url.render_as_string(hide_password=False)
    with _kept_lock:
        return _kept.setdefault(url, _Kept())


def sources(s: Session) -> list[tuple[str, str]]:
    """rollout_views.sources: (label, key) of every model version with answers."""
    return list(_of(s).get(s, ("sources",), lambda: rd.sources(s)))


def videos(s: Session, key: str) -> list[tuple[str, str]]:
    """rollout_views.videos: (label, video id) of the videos the version answered."""
    return list(_of(s).get(s, ("videos", key), lambda: rd.videos(s, key)))


def puzzles(s: Session, key: str, video_id: str) -> list[rd.PuzzleSummary]:
    """rollout_views.puzzles: the version's puzzles of one video with their answers' mean and std."""
    return list(_of(s).get(s, ("puzzles", key, video_id), lambda: rd.puzzles(s, key, video_id)))


def puzzle_picker(summaries: list[rd.PuzzleSummary], chosen: str | None = None) -> tuple[list, str]:
    """(choices, label) of the puzzle picker: the first PICKER_MAX puzzles, and `chosen` wherever it
    is; the label says how many the list leaves out."""
    shown = summaries[:PICKER_MAX]
    if chosen and all(x.puzzle_id != chosen for x in shown):
        shown = shown + [x for x in summaries if x.puzzle_id == chosen]
    label = PUZZLE_LABEL if len(summaries) <= PICKER_MAX else (
        f"{PUZZLE_LABEL} · the first {PICKER_MAX} of {len(summaries)}: the answers table below opens any")
    return [(x.label, x.puzzle_id) for x in shown], label

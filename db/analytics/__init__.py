"""Analytics for the stats page: DuckDB over Arrow tables pulled through SQLAlchemy, one function per
question, each returning a list of row dicts the UI can chart.

Speed: the pulled tables are append-only or insert-only (options, puzzles, the verdict history,
rollouts, set items), so a per-database cache pulls only rows past its last id on each call, and the
current verdicts are re-derived in DuckDB from the history (the last event per curator and puzzle or
option; an undo's event carries the restored state). Later calls pull the new rows only. The first
call in a process does not replay the whole history: it replays only the puzzle-verdict events and
reads the current option rejects from `option_verdicts` (see `StoreCopy._cold_events`); big pulls from
PostgreSQL come through ADBC as Arrow. DuckDB's json and core functions are built in: no extensions.

Puzzles are keyed in DuckDB by `pk = hash(puzzle_id)` (64-bit), computed once when rows are pulled:
every question joins on integers instead of 20-character ids (collision odds ~n^2/2^65, about 3e-10
at 100k puzzles)."""
from db.analytics.cache import _caches  # the per-process copies (tests reset them)
from db.analytics.questions import (
    HARDNESS_BINS,
    QUESTIONS,
    acceptance_by_hardness,
    acceptance_by_kind,
    acceptance_by_video,
    curator_agreement,
    curator_throughput,
    model_picks_by_kind,
)

__all__ = ["HARDNESS_BINS", "QUESTIONS", "_caches", "acceptance_by_hardness", "acceptance_by_kind",
           "acceptance_by_video", "curator_agreement", "curator_throughput", "model_picks_by_kind"]

"""The answers table of the Rollouts page: one model version's answers across ALL its puzzles, one
row per puzzle (its G answers averaged) or one per answer, sorted, filtered and paged, and group
aggregates by video or distractor kind with 95% intervals that resample videos.

Read by DuckDB over the store's analytics copy (db/analytics/cache.py: the rollouts, puzzles, videos
and options tables pulled incrementally), never row by row in Python: a page asks for one page of
rows and the group sums; the intervals resample the per-(group, video) sums in numpy
(mvp_core.stats.bootstrap.cluster_sums_cis, the project's one bootstrap). A *source* is the Rollouts
page's model version key (db/runs/rollout_views.py); the start model's result on the same puzzle
comes from the source `rollout_views.start_source` names."""
from __future__ import annotations

import hashlib
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field
from sqlalchemy.engine import Engine

from db.analytics.cache import StoreCopy, built, store_copy
from db.runs.rollout_views import parse_source
from mvp_core.reward import TERMS
from mvp_core.stats.bootstrap import cluster_sums_cis

# Columns a page may sort by (each a column of the row query below), per row level.
PUZZLE_SORTS = ("puzzle", "video", *TERMS, "total", "std", "length", "start_exact", "answers")
ANSWER_SORTS = ("puzzle", "video", "sample", *TERMS, "total", "advantage", "length", "start_exact")
TEXT_SORTS = ("puzzle", "video")
SORT_DECIMALS = 9
ROW_LEVELS = ("puzzle", "answer")
GROUP_BY = ("video", "kind")
MAX_PAGE = 500


class AnswersQuery(BaseModel):
    """What one page of the answers table asks for (the page's controls, validated here once)."""
    model_config = ConfigDict(extra="forbid")
    level: Literal["puzzle", "answer"] = Field("puzzle", description="One row per puzzle or per answer.")
    sort: str = Field("puzzle", description="Column to sort by (PUZZLE_SORTS or ANSWER_SORTS).")
    descending: bool = Field(False, description="Sort from the largest value down.")
    video: str | None = Field(None, max_length=64, description="Only this video's puzzles (its id).")
    kind: str | None = Field(None, max_length=64, description="Only puzzles with a distractor of this kind.")
    result: Literal["any", "right", "wrong"] = Field(
        "any", description="right: exact answers (per puzzle: every answer exact); wrong: the others.")
    search: str = Field("", max_length=200, description="Part of the puzzle id or the video's file name.")
    offset: int = Field(0, ge=0, le=10_000_000, description="Rows to skip (the page start).")
    limit: int = Field(50, ge=1, le=MAX_PAGE, description="Rows in the page.")

    def model_post_init(self, _ctx) -> None:
        allowed = PUZZLE_SORTS if self.level == "puzzle" else ANSWER_SORTS
        if self.sort not in allowed:
            raise ValueError(f"cannot sort {self.level} rows by {self.sort!r} (one of: {', '.join(allowed)})")


def _derive(c: StoreCopy, src: tuple[str, int | None], start: tuple[str, int | None] | None) -> str:
    """The name stem of two tables derived once per version and start model (and rebuilt only when
    the copy grew): STEM_a, one row per answer with its video, advantage, distractor kinds and the
    start model's exact on the puzzle; STEM_p, one row per puzzle. Every page, filter and group is
    then a plain scan of one of them. Call with `c.lock` held."""
    stem = "at_" + hashlib.sha1(repr((src, start)).encode()).hexdigest()[:16]
    if c.derived.get(stem) == _version(c):
        return stem

    def where(s: tuple[str, int | None]) -> tuple[str, list]:
        ck = "checkpoint_id IS NULL" if s[1] is None else "checkpoint_id = ?"
        return f"run_id = ? AND {ck}", [s[0]] + ([] if s[1] is None else [s[1]])
    w, params = where(src)
    if start is None:
        st = "SELECT NULL::UBIGINT AS pk, NULL::DOUBLE AS start_exact WHERE false"
    else:
        sw, sp = where(start)
        st = f"SELECT pk, avg(exact) AS start_exact FROM rollouts WHERE {sw} GROUP BY pk"
        params += sp
    # The advantage: the stored one, else the trainer's group formula (mvp_core/train/loss.py
    # group_advantages, scale_rewards "group": (r - mean) / (std + 1e-4), 0 for a group of one), in
    # SQL so 10^5 answers sort by it; tests/test_answers_table.py checks it against that function.
    c.db.execute(f"""CREATE OR REPLACE TABLE {stem}_a AS
        WITH r AS (SELECT * FROM rollouts WHERE {w}),
        st AS ({st}),
        k AS (SELECT pk, list_sort(list_distinct(list(kind))) AS kinds FROM okind
              WHERE pk IN (SELECT pk FROM r) GROUP BY pk)
        SELECT pz.id AS puzzle, pz.video_id, regexp_extract(v.path, '[^/]*$') AS video,
               r.sample_index AS sample, r.format, r.selection, r."order", r.exact, r.total, r.length,
               array_to_string(r.chosen, ', ') AS chosen,
               coalesce(r.advantage, coalesce((r.total - avg(r.total) OVER g)
                        / (stddev_samp(r.total) OVER g + 1e-4), 0.0)) AS advantage,
               coalesce(k.kinds, []::VARCHAR[]) AS kind_list, array_to_string(k.kinds, ', ') AS kinds,
               st.start_exact
        FROM r JOIN puzzles pz ON pz.pk = r.pk LEFT JOIN videos v ON v.id = pz.video_id
        LEFT JOIN st ON st.pk = r.pk LEFT JOIN k ON k.pk = r.pk
        WINDOW g AS (PARTITION BY r.pk)""", params)
    c.db.execute(f"""CREATE OR REPLACE TABLE {stem}_p AS
        SELECT puzzle, any_value(video) AS video, any_value(video_id) AS video_id, count(*) AS answers,
               avg(format) AS format, avg(selection) AS selection, avg("order") AS "order",
               avg(exact) AS exact, avg(total) AS total, coalesce(stddev_samp(total), 0.0) AS std,
               avg(length) AS length, any_value(kind_list) AS kind_list, any_value(kinds) AS kinds,
               any_value(start_exact) AS start_exact
        FROM {stem}_a GROUP BY puzzle""")
    c.derived[stem] = _version(c)
    return stem


def _version(c: StoreCopy) -> tuple:
    """What the derived tables read: answers, puzzles (with their videos) and options (the kinds).
    A verdict, a user or a set does not rebuild them."""
    return c.version("rollouts", "puzzles", "options")


def _filters(q: AnswersQuery) -> tuple[str, list]:
    where, params = ["true"], []
    if q.video:
        where.append("video_id = ?")
        params.append(q.video)
    if q.kind:
        where.append("list_contains(kind_list, ?)")
        params.append(q.kind)
    if q.result != "any":
        where.append(f"exact {'>= 1.0' if q.result == 'right' else '< 1.0'}")
    if q.search:
        where.append("(contains(lower(puzzle), ?) OR contains(lower(coalesce(video, '')), ?))")
        params += [q.search.lower()] * 2
    return " AND ".join(where), params


def ready(engine: Engine) -> bool:
    """Whether a page is quick now: False before the process's first copy of the store is built."""
    return built(engine)


def _copy(engine: Engine) -> StoreCopy | None:
    c = store_copy(engine)
    need = {"rollouts", "puzzles", "videos"}
    return c if need <= c.tables else None


COLUMNS = {"puzzle": ("puzzle", "video", "video_id", "answers", *TERMS[:3], "exact", "total", "std", "length",
                      "kinds", "start_exact"),
           "answer": ("puzzle", "video", "video_id", "sample", "chosen", *TERMS[:3], "exact", "total",
                      "advantage", "length", "kinds", "start_exact")}


def page(engine: Engine, source_key: str, q: AnswersQuery, start_key: str | None = None) -> tuple[list[dict], int]:
    """(rows of the page, rows matching the filters) of source `source_key`'s answers; each row
    carries `start_exact`, the start model's (`start_key`) mean exact on the same puzzle."""
    src, c = parse_source(source_key), _copy(engine)
    if src is None or c is None:
        return [], 0
    where, params = _filters(q)
    cols = ", ".join(f'"{k}"' for k in COLUMNS[q.level])
    direction = "DESC NULLS LAST" if q.descending else "ASC NULLS LAST"
    tie = "puzzle" if q.level == "puzzle" else "puzzle, sample"
    # a mean compares at 9 decimals: two puzzles whose answers average to the same value tie (and go by
    # puzzle id) instead of being ordered by the last bit of a sum taken in another order
    key = f'"{q.sort}"' if q.sort in TEXT_SORTS else f'round("{q.sort}", {SORT_DECIMALS})'
    with c.lock:
        table = _derive(c, src, parse_source(start_key)) + ("_p" if q.level == "puzzle" else "_a")

        def compute():
            n = c.query(f"SELECT count(*) AS n FROM {table} WHERE {where}", params)[0]["n"]
            return c.query(f"""SELECT {cols} FROM {table} WHERE {where}
                               ORDER BY {key} {direction}, {tie} LIMIT ? OFFSET ?""",
                           params + [q.limit, q.offset]), int(n)
        rows, n = c.memo(("page", table, q.model_dump_json()), _version(c), compute)
    return [dict(r) for r in rows], n


def kinds(engine: Engine, source_key: str) -> list[str]:
    """The distractor kinds among the source's puzzles (the kind filter's choices)."""
    src, c = parse_source(source_key), _copy(engine)
    if src is None or c is None:
        return []
    with c.lock:
        stem = _derive(c, src, None)
        return list(c.memo(("kinds", stem), _version(c), lambda: [
            r["kind"] for r in c.query(f"SELECT DISTINCT unnest(kind_list) AS kind FROM {stem}_p ORDER BY kind")]))


def groups(engine: Engine, source_key: str, by: str, q: AnswersQuery, start_key: str | None = None) -> list[dict]:
    """Per video or per distractor kind (`by`), over the answers the filters keep (the result filter
    by answer): puzzles, answers, each reward term's mean, and exact and total with 95% intervals
    resampling videos (a puzzle with several distractor kinds counts in each of its kinds' groups);
    the start model's mean exact over the same answers' puzzles."""
    if by not in GROUP_BY:
        raise ValueError(f"group by one of: {', '.join(GROUP_BY)}, not {by!r}")
    src, c = parse_source(source_key), _copy(engine)
    if src is None or c is None:
        return []
    where, params = _filters(q)
    key = "video" if by == "video" else "unnest(CASE WHEN len(kind_list) = 0 THEN ['none'] ELSE kind_list END)"
    with c.lock:
        stem = _derive(c, src, parse_source(start_key))
        # the intervals change only when the derived tables do: a repeated grouping (paging, a sort,
        # back to a filter seen before) costs a lookup
        out = c.memo(("groups", stem, by, where, tuple(params)), _version(c),
                     lambda: _group_rows(c, stem, key, where, params))
    return [dict(g) for g in out]


def _group_rows(c: StoreCopy, stem: str, key: str, where: str, params: list) -> list[dict]:
    cols = 'puzzle, video_id, exact, total, format, selection, "order", length, start_exact'
    # per (group, video) sums, gathered into one list per group: what the bootstrap resamples,
    # so no answer comes into Python
    rows = c.query(f"""WITH e AS (SELECT {key} AS grp, {cols} FROM {stem}_a WHERE {where}),
        v AS (SELECT grp, video_id, count(*) AS answers, count(DISTINCT puzzle) AS puzzles,
                     sum(exact) AS exact, sum(total) AS total, sum(format) AS format,
                     sum(selection) AS selection, sum("order") AS "order", sum(length) AS length,
                     sum(start_exact) AS start_sum, count(start_exact) AS start_n
              FROM e GROUP BY grp, video_id)
        SELECT grp, count(*) AS videos, sum(puzzles) AS puzzles, sum(answers) AS answers,
               sum(format) / sum(answers) AS format, sum(selection) / sum(answers) AS selection,
               sum("order") / sum(answers) AS "order", sum(length) / sum(answers) AS length,
               sum(start_sum) / nullif(sum(start_n), 0) AS start_exact,
               list(exact ORDER BY video_id) AS exact_sums, list(total ORDER BY video_id) AS total_sums,
               list(answers ORDER BY video_id) AS counts
        FROM v GROUP BY grp ORDER BY grp""", params)
    out = []
    for r in rows:
        exact, total = cluster_sums_cis([r.pop("exact_sums"), r.pop("total_sums")], r.pop("counts"))
        out.append({"group": r.pop("grp") or "(none)", **r,
                    "exact": exact.mean, "exact_lo": exact.lo, "exact_hi": exact.hi,
                    "total": total.mean, "total_lo": total.lo, "total_hi": total.hi})
    return out

"""The answers table of the Rollouts page: one model version's answers across ALL its puzzles, one
row per puzzle (its G answers averaged) or one per answer, sorted, filtered and paged, and group
aggregates by video or distractor kind with 95% intervals that resample videos.

Read by DuckDB over the store's analytics copy (db/analytics/cache.py: the rollouts, puzzles, videos
and options tables pulled incrementally), never row by row in Python: a page asks for one page of
rows and the group sums; the intervals resample the per-(group, video) sums in numpy
(mvp_core.stats.bootstrap.cluster_sums_ci, the project's one bootstrap). A *source* is the Rollouts
page's model version key (db/runs/rollout_views.py); the start model's result on the same puzzle
comes from the source `rollout_views.start_source` names."""
from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field
from sqlalchemy.engine import Engine

from db.analytics.cache import StoreCopy, store_copy
from db.runs.rollout_views import parse_source
from mvp_core.reward import TERMS
from mvp_core.stats.bootstrap import cluster_sums_ci

# Columns a page may sort by (each a column of the row query below), per row level.
PUZZLE_SORTS = ("puzzle", "video", *TERMS, "total", "std", "length", "start_exact", "answers")
ANSWER_SORTS = ("puzzle", "video", "sample", *TERMS, "total", "advantage", "length", "start_exact")
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


def _answers_sql(source: tuple[str, int | None], start: tuple[str, int | None] | None) -> tuple[str, list]:
    """CTEs `a` (the source's answers with video, advantage and the start model's exact on the
    puzzle) and `k` (each puzzle's distractor kinds), with their parameters."""
    ck = "checkpoint_id IS NULL" if source[1] is None else "checkpoint_id = ?"
    params: list = [source[0]] + ([] if source[1] is None else [source[1]])
    if start is None:
        st = "SELECT NULL::UBIGINT AS pk, NULL::DOUBLE AS start_exact WHERE false"
    else:
        st = ("SELECT pk, avg(exact) AS start_exact FROM rollouts WHERE run_id = ? AND "
              + ("checkpoint_id IS NULL" if start[1] is None else "checkpoint_id = ?") + " GROUP BY pk")
        params += [start[0]] + ([] if start[1] is None else [start[1]])
    # The advantage: the stored one, else the trainer's group formula (mvp_core/train/loss.py
    # group_advantages, scale_rewards "group": (r - mean) / (std + 1e-4), 0 for a group of one), in
    # SQL so 10^5 answers sort by it; tests/test_answers_table.py checks it against that function.
    sql = f"""
        r AS (SELECT * FROM rollouts WHERE run_id = ? AND {ck}),
        st AS ({st}),
        a AS (SELECT pz.id AS puzzle, pz.video_id, regexp_extract(v.path, '[^/]*$') AS video,
                     r.pk, r.sample_index AS sample, r.format, r.selection, r."order", r.exact, r.total,
                     r.length, r.chosen,
                     coalesce(r.advantage, coalesce((r.total - avg(r.total) OVER g)
                              / (stddev_samp(r.total) OVER g + 1e-4), 0.0)) AS advantage,
                     st.start_exact
              FROM r JOIN puzzles pz ON pz.pk = r.pk LEFT JOIN videos v ON v.id = pz.video_id
              LEFT JOIN st ON st.pk = r.pk
              WINDOW g AS (PARTITION BY r.pk)),
        k AS (SELECT pk, array_to_string(list_sort(list_distinct(list(kind))), ', ') AS kinds
              FROM okind GROUP BY pk)"""
    return sql, params


def _filters(q: AnswersQuery, exact_col: str) -> tuple[str, list]:
    where, params = ["true"], []
    if q.video:
        where.append("video_id = ?")
        params.append(q.video)
    if q.kind:
        where.append("list_contains(string_split(coalesce(kinds, ''), ', '), ?)")
        params.append(q.kind)
    if q.result != "any":
        where.append(f"{exact_col} {'>= 1.0' if q.result == 'right' else '< 1.0'}")
    if q.search:
        where.append("(contains(lower(puzzle), ?) OR contains(lower(coalesce(video, '')), ?))")
        params += [q.search.lower()] * 2
    return " AND ".join(where), params


def _copy(engine: Engine) -> StoreCopy | None:
    c = store_copy(engine)
    need = {"rollouts", "puzzles", "videos"}
    return c if need <= c.tables else None


def _rows_sql(q: AnswersQuery) -> str:
    if q.level == "answer":
        return """SELECT a.puzzle, a.video, a.video_id, a.sample, a.format, a.selection, a."order", a.exact,
                         a.total, a.advantage, a.length, array_to_string(a.chosen, ', ') AS chosen, k.kinds,
                         a.start_exact
                  FROM a LEFT JOIN k ON k.pk = a.pk"""
    return """SELECT a.puzzle, any_value(a.video) AS video, any_value(a.video_id) AS video_id,
                     count(*) AS answers, avg(a.format) AS format, avg(a.selection) AS selection,
                     avg(a."order") AS "order", avg(a.exact) AS exact, avg(a.total) AS total,
                     coalesce(stddev_samp(a.total), 0.0) AS std, avg(a.length) AS length,
                     any_value(k.kinds) AS kinds, any_value(a.start_exact) AS start_exact
              FROM a LEFT JOIN k ON k.pk = a.pk GROUP BY a.puzzle"""


def page(engine: Engine, source_key: str, q: AnswersQuery, start_key: str | None = None) -> tuple[list[dict], int]:
    """(rows of the page, rows matching the filters) of source `source_key`'s answers; each row
    carries `start_exact`, the start model's (`start_key`) mean exact on the same puzzle."""
    src, c = parse_source(source_key), _copy(engine)
    if src is None or c is None:
        return [], 0
    ctes, params = _answers_sql(src, parse_source(start_key))
    where, fparams = _filters(q, "exact")
    col = '"order"' if q.sort == "order" else q.sort
    direction = "DESC NULLS LAST" if q.descending else "ASC NULLS LAST"
    tie = "puzzle" if q.level == "puzzle" else "puzzle, sample"
    rows = c.query(f"""WITH {ctes}, t AS ({_rows_sql(q)}), f AS (SELECT * FROM t WHERE {where})
                       SELECT *, count(*) OVER () AS _matching FROM f
                       ORDER BY {col} {direction}, {tie} LIMIT ? OFFSET ?""",
                   params + fparams + [q.limit, q.offset])
    total = rows[0].pop("_matching") if rows else _count(c, ctes, params, q, where, fparams)
    for r in rows[1:]:
        r.pop("_matching")
    return rows, int(total)


def _count(c: StoreCopy, ctes: str, params: list, q: AnswersQuery, where: str, fparams: list) -> int:
    """Rows matching when the page itself is empty (an offset past the end)."""
    return c.query(f"WITH {ctes}, t AS ({_rows_sql(q)}) SELECT count(*) AS n FROM t WHERE {where}",
                   params + fparams)[0]["n"]


def kinds(engine: Engine, source_key: str) -> list[str]:
    """The distractor kinds among the source's puzzles (the kind filter's choices)."""
    src, c = parse_source(source_key), _copy(engine)
    if src is None or c is None or "options" not in c.tables:
        return []
    ctes, params = _answers_sql(src, None)
    return [r["kind"] for r in c.query(f"""WITH {ctes} SELECT DISTINCT o.kind FROM okind o
                                           WHERE o.pk IN (SELECT pk FROM r) ORDER BY o.kind""", params)]


def groups(engine: Engine, source_key: str, by: str, q: AnswersQuery, start_key: str | None = None) -> list[dict]:
    """Per video or per distractor kind (`by`), over the answers the filters keep: puzzles, answers,
    each reward term's mean, and exact and total with 95% intervals resampling videos (a puzzle
    with several distractor kinds counts in each of its kinds' groups); the start model's mean exact
    over the same puzzles."""
    if by not in GROUP_BY:
        raise ValueError(f"group by one of: {', '.join(GROUP_BY)}, not {by!r}")
    src, c = parse_source(source_key), _copy(engine)
    if src is None or c is None:
        return []
    ctes, params = _answers_sql(src, parse_source(start_key))
    where, fparams = _filters(q.model_copy(update={"level": "answer", "sort": "puzzle"}), "exact")
    key = ("f.video" if by == "video" else
           "unnest(string_split(coalesce(f.kinds, 'none'), ', '))")
    # one row per (group, video): the sums the bootstrap resamples, so no answer comes into Python
    per_video = c.query(f"""WITH {ctes}, t AS ({_rows_sql(AnswersQuery(level="answer"))}),
            f AS (SELECT * FROM t WHERE {where}), e AS (SELECT {key} AS grp, * FROM f)
            SELECT grp, video_id, count(*) AS answers, count(DISTINCT puzzle) AS puzzles,
                   sum(exact) AS exact, sum(total) AS total, sum(format) AS format, sum(selection) AS selection,
                   sum("order") AS "order", sum(length) AS length,
                   sum(start_exact) AS start_sum, count(start_exact) AS start_n
            FROM e GROUP BY grp, video_id ORDER BY grp, video_id""", params + fparams)
    by_group: dict[str, list[dict]] = {}
    for r in per_video:
        by_group.setdefault(r["grp"] if r["grp"] is not None else "(none)", []).append(r)
    return [_group_row(name, rows) for name, rows in by_group.items()]


def _group_row(name: str, rows: list[dict]) -> dict:
    n = sum(r["answers"] for r in rows)
    counts = [r["answers"] for r in rows]
    exact = cluster_sums_ci([r["exact"] for r in rows], counts)
    total = cluster_sums_ci([r["total"] for r in rows], counts)
    start_n = sum(r["start_n"] for r in rows)
    return {"group": name, "videos": len(rows), "puzzles": sum(r["puzzles"] for r in rows), "answers": n,
            **{t: sum(r[t] for r in rows) / n for t in ("format", "selection", "order")},
            "exact": exact.mean, "exact_lo": exact.lo, "exact_hi": exact.hi,
            "total": total.mean, "total_lo": total.lo, "total_hi": total.hi,
            "length": sum(r["length"] for r in rows) / n,
            "start_exact": sum(r["start_sum"] for r in rows) / start_n if start_n else None}

"""The stats page's questions, one function each, over the DuckDB copy (db/analytics/cache.py); each
returns a list of row dicts the UI can chart. `QUESTIONS` names them for the page and the benchmark."""
from __future__ import annotations

from sqlalchemy.engine import Engine

from db.analytics.cache import StoreCopy, store_copy

HARDNESS_BINS = (0.0, 0.5, 0.7, 0.8, 0.9, 0.95, 1.01)


# Distractor judgments: every decisive puzzle verdict judges each distractor of its puzzle; it is
# "rejected" when the same curator rejected that option, else kept. Never materialised: `judged`
# counts come from (decisive verdicts per puzzle) x (distractors per puzzle and kind/bin/video), and
# only the reject rows (an option verdict whose curator's puzzle verdict is decisive) are joined.
_DEC_REJ = """
    WITH dec AS (SELECT pk, count(*) AS n FROM pv WHERE verdict IN ('accept', 'reject') GROUP BY pk),
    rej AS (SELECT * FROM rejd)
"""


def acceptance_by_kind(engine: Engine) -> list[dict]:
    """Per distractor kind: distractor judgments, rejects, keep rate, and the most common reject reason."""
    if not _has_options(c := store_copy(engine)):
        return []
    return c.query(_DEC_REJ + """
        , j AS (SELECT k.kind, sum(k.n * dec.n) AS judged FROM okind k JOIN dec ON dec.pk = k.pk
                GROUP BY k.kind),
        r AS (SELECT kind, count(*) AS rejected, mode(reason_code) AS top_reason FROM rej GROUP BY kind)
        SELECT j.kind, j.judged, coalesce(r.rejected, 0) AS rejected,
               round(1 - coalesce(r.rejected, 0)::DOUBLE / j.judged, 4) AS keep_rate, r.top_reason
        FROM j LEFT JOIN r ON r.kind = j.kind ORDER BY j.kind""")


def acceptance_by_hardness(engine: Engine, bins: tuple = HARDNESS_BINS) -> list[dict]:
    """Per difficulty bin (similarity to the targets): distractor judgments and keep rate."""
    if not _has_options(c := store_copy(engine)):
        return []
    edges = list(bins)
    # aggregate by difficulty value first, then bin the (few) distinct values
    return c.query(_DEC_REJ + """
        , j AS (SELECT o.difficulty, sum(dec.n) AS judged FROM options o JOIN dec ON dec.pk = o.pk
                WHERE o.kind <> 'target' GROUP BY o.difficulty),
        r AS (SELECT difficulty, count(*) AS rejected FROM rej GROUP BY difficulty),
        b AS (SELECT j.judged, coalesce(r.rejected, 0) AS rejected,
                     list_position(list_transform(?::DOUBLE[], lambda e: j.difficulty < e), true) AS bin
              FROM j LEFT JOIN r ON r.difficulty = j.difficulty)
        SELECT (?::DOUBLE[])[bin - 1] AS lo, (?::DOUBLE[])[bin] AS hi, sum(judged) AS judged,
               sum(rejected) AS rejected, round(1 - sum(rejected)::DOUBLE / sum(judged), 4) AS keep_rate
        FROM b WHERE bin > 1 GROUP BY bin ORDER BY bin""", [edges, edges, edges])


def acceptance_by_video(engine: Engine) -> list[dict]:
    """Per source video: decisive puzzle verdicts, accept rate, and distractor keep rate."""
    if not _has_options(c := store_copy(engine)):
        return []
    # per puzzle first (verdicts, accepts, distractor judgments, rejects), then one join with puzzles
    return c.query("""
        WITH d AS (SELECT pk, count(*) AS n, sum((verdict = 'accept')::INT) AS acc FROM pv
                   WHERE verdict IN ('accept', 'reject') GROUP BY pk),
        nd AS (SELECT pk, sum(n) AS n FROM okind GROUP BY pk),
        r AS (SELECT pk, count(*) AS n FROM rejd GROUP BY pk),
        per AS (SELECT p.video_id, d.n, d.acc, d.n * coalesce(nd.n, 0) AS judged, coalesce(r.n, 0) AS rejected
                FROM d JOIN puzzles p ON p.pk = d.pk LEFT JOIN nd ON nd.pk = d.pk LEFT JOIN r ON r.pk = d.pk)
        SELECT video_id, sum(n) AS verdicts, sum(acc) AS accepted, round(sum(acc)::DOUBLE / sum(n), 4) AS accept_rate,
               round(1 - sum(rejected)::DOUBLE / nullif(sum(judged), 0), 4) AS distractor_keep_rate
        FROM per GROUP BY video_id ORDER BY verdicts DESC, video_id""")


def curator_throughput(engine: Engine) -> list[dict]:
    """Per curator and day: verdicts (accept/reject; a skip is not a verdict, see
    db.review.stats.DECISIVE), median seconds per verdict, verdicts per hour."""
    from db.review.stats import decisive_sql
    c = store_copy(engine)
    return c.query(f"""
        SELECT u.name AS curator, CAST(pv.created_at AS DATE) AS day, count(*) AS verdicts,
               round(median(pv."seconds"), 2) AS median_seconds,
               round(3600.0 / NULLIF(median(pv."seconds"), 0), 1) AS per_hour
        FROM pv JOIN users u ON u.id = pv.user_id WHERE {decisive_sql("pv.verdict")}
        GROUP BY ALL ORDER BY day, curator""")


def curator_agreement(engine: Engine) -> list[dict]:
    """Per pair of curators: puzzles both judged (accept/reject), observed agreement, Cohen's kappa."""
    c = store_copy(engine)
    return c.query("""
        WITH d AS (SELECT user_id, pk, (verdict = 'accept')::INT AS acc FROM pv
                   WHERE verdict IN ('accept', 'reject')),
        pairs AS (SELECT a.user_id AS ua, b.user_id AS ub, a.acc AS x, b.acc AS y
                  FROM d a JOIN d b ON a.pk = b.pk AND a.user_id < b.user_id),
        s AS (SELECT ua, ub, count(*) AS n, avg((x = y)::INT) AS p_o,
                     avg(x) * avg(y) + (1 - avg(x)) * (1 - avg(y)) AS p_e FROM pairs GROUP BY ua, ub)
        SELECT u1.name AS a, u2.name AS b, n AS common, round(p_o, 4) AS observed,
               CASE WHEN p_e < 1 THEN round((p_o - p_e) / (1 - p_e), 4) END AS kappa
        FROM s JOIN users u1 ON u1.id = ua JOIN users u2 ON u2.id = ub ORDER BY common DESC""")


def model_picks_by_kind(engine: Engine, run_id: str | None = None) -> list[dict]:
    """How often the model picks each option kind: picks, share of all picks, and picks per offered
    option of that kind (labels mapped through the run's set, whose options are re-lettered)."""
    c = store_copy(engine)
    if "rollouts" not in c.tables or "options" not in c.tables:
        return []
    has_sets = "set_options" in c.tables
    set_join = ("LEFT JOIN set_options so ON so.set_name = r.set_name AND so.pk = r.pk "
                "AND so.label = r.label") if has_sets else ""
    kind = "coalesce(so.kind, o.kind)" if has_sets else "o.kind"
    return c.query(f"""
        WITH r AS (SELECT ro.id, ro.pk, runs.set_name, unnest(ro.chosen) AS label
                   FROM rollouts ro JOIN runs ON runs.id = ro.run_id WHERE ? IS NULL OR ro.run_id = ?),
        picks AS (SELECT {kind} AS kind FROM r
                  LEFT JOIN options o ON o.pk = r.pk AND o.label = r.label {set_join}),
        offered AS (SELECT o.kind, count(*) AS n FROM (SELECT DISTINCT pk FROM rollouts
                    WHERE ? IS NULL OR run_id = ?) q JOIN options o ON o.pk = q.pk GROUP BY o.kind)
        SELECT coalesce(p.kind, 'unknown') AS kind, count(*) AS picks,
               round(count(*) / sum(count(*)) OVER (), 4) AS share, any_value(offered.n) AS offered_options
        FROM picks p LEFT JOIN offered ON offered.kind = p.kind GROUP BY ALL ORDER BY picks DESC""",
                   [run_id, run_id, run_id, run_id])


def _has_options(c: StoreCopy) -> bool:
    return "options" in c.tables


QUESTIONS = {
    "acceptance_by_kind": acceptance_by_kind,
    "acceptance_by_hardness": acceptance_by_hardness,
    "acceptance_by_video": acceptance_by_video,
    "curator_throughput": curator_throughput,
    "curator_agreement": curator_agreement,
    "model_picks_by_kind": model_picks_by_kind,
}

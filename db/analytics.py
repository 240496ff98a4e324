"""Analytics for the stats page: DuckDB over Arrow tables pulled through SQLAlchemy, one function per
question, each returning a list of row dicts the UI can chart.

Speed: the pulled tables are append-only or insert-only (options, puzzles, the verdict history,
rollouts, set items), so a per-database cache pulls only rows past its last id on each call, and the
current verdicts are re-derived in DuckDB from the history (the last event per curator and puzzle or
option; an undo's event carries the restored state). Later calls pull the new rows only. The first
call in a process does not replay the whole history: it replays only the puzzle-verdict events and
reads the current option rejects from `option_verdicts` (see `_Cache._cold_events`); big pulls from
PostgreSQL come through ADBC as Arrow. DuckDB's json and core functions are built in: no extensions.

Puzzles are keyed in DuckDB by `pk = hash(puzzle_id)` (64-bit), computed once when rows are pulled:
every question joins on integers instead of 20-character ids (collision odds ~n^2/2^65, about 3e-10
at 100k puzzles)."""
from __future__ import annotations

import json
import threading
from operator import itemgetter

import duckdb
import pyarrow as pa
from sqlalchemy import Text, cast, func, select
from sqlalchemy.engine import Engine

from db.engine import read_engine
from db.models import Option, Puzzle
from db.models.curation import CuratedSet, OptionVerdict, SetItem, User, VerdictEvent
from db.models.runs import Rollout, Run

HARDNESS_BINS = (0.0, 0.5, 0.7, 0.8, 0.9, 0.95, 1.01)
# (name, DuckDB type) of each pulled column
_OPTION_COLS = [("id", "BIGINT"), ("puzzle_id", "VARCHAR"), ("label", "VARCHAR"), ("kind", "VARCHAR"),
                ("difficulty", "DOUBLE")]
_EVENT_COLS = [("id", "BIGINT"), ("user_id", "BIGINT"), ("puzzle_id", "VARCHAR"), ("label", "VARCHAR"),
               ("after", "VARCHAR"), ("created_at", "VARCHAR")]
_ROLLOUT_COLS = [("id", "BIGINT"), ("run_id", "VARCHAR"), ("puzzle_id", "VARCHAR"), ("chosen", "VARCHAR"),
                 ("total", "DOUBLE"), ("exact", "DOUBLE")]


# A pull of more rows than this (the first call in a process, or a long gap) is a bulk pull: on
# PostgreSQL it goes through the Arrow-native ADBC driver (COPY in binary, Arrow buffers filled in C)
# instead of psycopg's fetchall plus a tuple-to-Arrow conversion. Smaller pulls keep the pooled
# connection (opening an ADBC connection costs a few ms, which warm calls should not pay).
BULK_MIN_ROWS = 20_000


def _adbc_connect(engine: Engine):
    """An autocommit ADBC connection to the engine's PostgreSQL database, or None (other backends).
    Autocommit: an open read transaction would pin an old snapshot.

    Not for SQLite: the ADBC SQLite driver links its own copy of the SQLite library, and two copies in
    one process break each other's POSIX file locks on the same database (closing one copy's file
    descriptor drops the other's locks): tried, it gave stale reads and "disk I/O error" on the
    sqlite3 connections of the same process."""
    url = engine.url
    if url.get_backend_name() == "postgresql":
        import adbc_driver_postgresql.dbapi
        uri = url.set(drivername="postgresql").render_as_string(hide_password=False)
        return adbc_driver_postgresql.dbapi.connect(uri, autocommit=True)
    return None


def _arrow_adbc(adbc, dialect, stmt, names: list[str]) -> pa.Table:
    sql = str(stmt.compile(dialect=dialect, compile_kwargs={"literal_binds": True}))
    cur = adbc.cursor()
    try:
        cur.execute(sql)
        t = cur.fetch_arrow_table()
    finally:
        cur.close()
    return t.rename_columns(names)


_PA_TYPES = {"BIGINT": pa.int64(), "VARCHAR": pa.string(), "DOUBLE": pa.float64()}


def _arrow(conn, stmt, names: list[str], types: list[str] | None = None) -> pa.Table:
    """Run a Core select on the raw DBAPI cursor (plain tuples: no Row objects, no per-value type
    processing) and build an Arrow table column by column. Only integer cursors are bound, so the
    statement is rendered with literal values. With `types` (DuckDB type names) the Arrow arrays are
    built typed: ~3x faster than letting Arrow infer them, and `map(itemgetter)` per column is ~2x
    faster than transposing with zip(*rows) (700k options: 0.5 s instead of 1.8 s)."""
    sql = str(stmt.compile(dialect=conn.dialect, compile_kwargs={"literal_binds": True}))
    cur = conn.connection.dbapi_connection.cursor()
    try:
        cur.execute(sql)
        rows = cur.fetchall()
    finally:
        cur.close()
    if not rows:
        return pa.table({n: pa.array([], pa.null()) for n in names})
    if types is None:
        return pa.table({n: pa.array(c) for n, c in zip(names, zip(*rows))})
    return pa.table({n: pa.array(list(map(itemgetter(i), rows)), type=_PA_TYPES[t])
                     for i, (n, t) in enumerate(zip(names, types))})


class _Cache:
    """Per-database DuckDB copy of the insert-only tables, grown by the rows past each table's last id.
    `pv`/`ov` (current puzzle/option verdicts) are kept up to date from each new batch of events."""

    def __init__(self, engine: Engine):
        self.engine = read_engine(engine)
        self.lock = threading.RLock()
        self.db = duckdb.connect()
        self.cursor = {"options": 0, "events": 0, "rollouts": 0, "set_items": 0}
        self.n_puzzles = -1
        self.tables: set[str] = set()
        self.db.execute('CREATE TABLE pv (user_id BIGINT, pk UBIGINT, verdict VARCHAR, "seconds" DOUBLE, '
                        'created_at TIMESTAMP)')
        # ov = the current option *rejects* (a keep, or no row, never counts); it carries its option's
        # kind and difficulty (options never change), so the reject rows need no join with options;
        # okind = distractors per (puzzle, kind), grown with each options batch.
        self.db.execute("CREATE TABLE ov (user_id BIGINT, pk UBIGINT, label VARCHAR, verdict VARCHAR, "
                        "reason_code VARCHAR, kind VARCHAR, difficulty DOUBLE)")
        self.db.execute("CREATE TABLE options (id BIGINT, pk UBIGINT, label VARCHAR, kind VARCHAR, "
                        "difficulty DOUBLE)")
        self.db.execute("CREATE TABLE okind (pk UBIGINT, kind VARCHAR, n BIGINT)")
        # rejd = the distractor rejects that count: an option reject whose curator's puzzle verdict is
        # decisive. Re-derived for the (puzzle, curator) pairs each batch of events touches, so no
        # question joins the option verdicts with the puzzle verdicts.
        self.db.execute("CREATE TABLE rejd (user_id BIGINT, pk UBIGINT, kind VARCHAR, difficulty DOUBLE, "
                        "reason_code VARCHAR)")

    def refresh(self) -> None:
        with self.lock, self.engine.connect() as conn:
            self._pull(conn, "options", Option.id,
                       select(Option.id, Option.puzzle_id, Option.label, Option.kind, Option.difficulty),
                       _OPTION_COLS, self._options)
            # JSON and timestamps come as text (no per-row Python parsing); DuckDB parses them.
            self._pull(conn, "events", VerdictEvent.id,
                       select(VerdictEvent.id, VerdictEvent.user_id, VerdictEvent.puzzle_id, VerdictEvent.label,
                              cast(VerdictEvent.after, Text), cast(VerdictEvent.created_at, Text)),
                       _EVENT_COLS, self._events)
            self._pull(conn, "rollouts", Rollout.id,
                       select(Rollout.id, Rollout.run_id, Rollout.puzzle_id, cast(Rollout.chosen_labels, Text),
                              Rollout.total, Rollout.exact),
                       _ROLLOUT_COLS, self._rollouts)
            self._pull_set_items(conn)
            n = conn.scalar(select(func.count()).select_from(Puzzle))
            if n != self.n_puzzles:   # puzzles are only ever added; re-pull the small id->video map
                self.db.register("_delta", _arrow(conn, select(Puzzle.id, Puzzle.video_id), ["id", "video_id"]))
                self.db.execute("CREATE OR REPLACE TABLE puzzles AS SELECT hash(id) AS pk, video_id FROM _delta")
                self.db.unregister("_delta")
                self.tables.add("puzzles")
                self.n_puzzles = n
            self._replace("users", _arrow(conn, select(User.id, User.name), ["id", "name"]))
            self._replace("runs", _arrow(conn, select(Run.id, Run.set_name), ["id", "set_name"]))

    def _replace(self, name: str, t: pa.Table) -> None:
        self.db.register("_delta", t)
        self.db.execute(f"CREATE OR REPLACE TABLE {name} AS SELECT * FROM _delta")
        self.db.unregister("_delta")
        self.tables.add(name)

    def _append(self, name: str, sql: str) -> None:
        if name in self.tables:
            self.db.execute(f"INSERT INTO {name} {sql}")
        else:
            self.db.execute(f"CREATE TABLE {name} AS {sql}")
            self.tables.add(name)

    def _fetch(self, conn, stmt, cols: list[tuple[str, str]], n_hint: int) -> pa.Table:
        """Rows of a Core select as Arrow: on PostgreSQL through ADBC when about `n_hint` >
        BULK_MIN_ROWS rows are expected, else through the pooled connection's DBAPI cursor.
        `cols`: (name, DuckDB type) of each column."""
        names, types = [n for n, _ in cols], [t for _, t in cols]
        adbc = _adbc_connect(self.engine) if n_hint > BULK_MIN_ROWS else None
        if adbc is None:
            return _arrow(conn, stmt, names, types)
        try:
            return _arrow_adbc(adbc, conn.dialect, stmt, names)
        finally:
            adbc.close()

    def _pull(self, conn, key, id_col, stmt, cols, transform=None) -> None:
        last = conn.scalar(select(func.max(id_col)))
        if last is None or last <= self.cursor[key]:
            return
        if key == "events" and self.cursor[key] == 0:
            self._cold_events(conn, stmt, cols, last)
            return
        delta = self._fetch(conn, stmt.where(id_col > self.cursor[key]).order_by(id_col), cols,
                            last - self.cursor[key])
        if not delta.num_rows:
            return
        self.cursor[key] = delta.column("id")[-1].as_py()
        self.db.register("_delta", delta)
        try:
            if transform:
                transform()
            else:
                self._append(key, "SELECT * FROM _delta")
        finally:
            self.db.unregister("_delta")

    def _cold_events(self, conn, stmt, cols, last: int) -> None:
        """First pull of the history: the puzzle verdicts are replayed from their events up to `last`
        (they need each event's time and seconds), but the option verdicts, most of the history, come
        from the current `option_verdicts` table, read after `last`. That table may already hold
        changes made after event `last`; the next pull replays those events, and replaying an event
        whose change is already applied gives the same state again (the last event per key wins), so
        the copy converges to exactly what replaying the whole history gives."""
        pv = self._fetch(conn, stmt.where(VerdictEvent.label.is_(None), VerdictEvent.id <= last), cols, last)
        if pv.num_rows:
            self.db.register("_delta", pv)
            try:
                self._events()
            finally:
                self.db.unregister("_delta")
        self.cursor["events"] = last
        # Only the rejects (`ov` holds no keeps), keyed by option id: no strings to move. An option
        # written after this call's options pull (rare) is read with its puzzle id and label instead;
        # the next options pull gives it its kind.
        ov, rej, known = OptionVerdict, OptionVerdict.verdict == "reject", self.cursor["options"]
        self._insert_delta(
            self._fetch(conn, select(ov.option_id, ov.user_id, ov.reason_code).where(rej, ov.option_id <= known),
                        [("option_id", "BIGINT"), ("user_id", "BIGINT"), ("reason_code", "VARCHAR")], last),
            """INSERT INTO ov SELECT d.user_id, o.pk, o.label, 'reject', d.reason_code, o.kind, o.difficulty
               FROM _delta d JOIN options o ON o.id = d.option_id""")
        self._insert_delta(
            _arrow(conn, select(ov.user_id, ov.puzzle_id, ov.label, ov.reason_code).where(rej, ov.option_id > known),
                   ["user_id", "puzzle_id", "label", "reason_code"], ["BIGINT", "VARCHAR", "VARCHAR", "VARCHAR"]),
            """INSERT INTO ov SELECT user_id, hash(puzzle_id), label, 'reject', reason_code, NULL, NULL
               FROM _delta""")
        self.db.execute("CREATE OR REPLACE TEMP TABLE _keys AS SELECT DISTINCT pk, user_id FROM ov")
        self._rederive_rejd()

    def _insert_delta(self, t: pa.Table, sql: str) -> None:
        if t.num_rows:
            self.db.register("_delta", t)
            try:
                self.db.execute(sql)
            finally:
                self.db.unregister("_delta")

    def _options(self) -> None:
        self.db.execute("""INSERT INTO options SELECT id, hash(puzzle_id), label, kind, difficulty
                           FROM _delta""")
        self.db.execute("""INSERT INTO okind SELECT hash(puzzle_id), kind, count(*) FROM _delta
                           WHERE kind <> 'target' GROUP BY ALL""")
        # an option verdict pulled before its option (both written between two of our pulls) gets its
        # kind now
        self.db.execute("""CREATE OR REPLACE TEMP TABLE _keys AS SELECT DISTINCT ov.pk, ov.user_id FROM ov
                           JOIN options o ON o.pk = ov.pk AND o.label = ov.label WHERE ov.kind IS NULL""")
        self.db.execute("""UPDATE ov SET kind = o.kind, difficulty = o.difficulty FROM options o
                           WHERE ov.kind IS NULL AND o.pk = ov.pk AND o.label = ov.label""")
        self._rederive_rejd()
        self.tables.add("options")

    def _events(self) -> None:
        """Apply a batch of history events: the last event per key replaces the current verdict."""
        # Keep the last event per key first, then parse only what each kind of row needs: JSON once per
        # row (a multi-path extract), timestamps only for puzzle verdicts.
        self.db.execute("""CREATE OR REPLACE TEMP TABLE _ev AS
            SELECT user_id, hash(puzzle_id) AS pk, label, arg_max("after", id) AS "after",
                   arg_max(created_at, id) AS created_at
            FROM _delta GROUP BY user_id, pk, label""")
        self.db.execute("""DELETE FROM pv USING _ev WHERE _ev.label IS NULL
                           AND pv.user_id = _ev.user_id AND pv.pk = _ev.pk""")
        self.db.execute("""INSERT INTO pv SELECT user_id, pk, j[1], TRY_CAST(j[2] AS DOUBLE),
                                  TRY_CAST(created_at AS TIMESTAMP)
                           FROM (SELECT *, json_extract_string("after", ['$.verdict', '$.seconds']) AS j
                                 FROM _ev WHERE label IS NULL)
                           WHERE j[1] IS NOT NULL""")
        self.db.execute("""DELETE FROM ov USING _ev WHERE _ev.label IS NOT NULL AND ov.user_id = _ev.user_id
                           AND ov.pk = _ev.pk AND ov.label = _ev.label""")
        self.db.execute("""INSERT INTO ov SELECT e.user_id, e.pk, e.label, e.j[1], e.j[2], o.kind, o.difficulty
                           FROM (SELECT *, json_extract_string("after", ['$.verdict', '$.reason_code']) AS j
                                 FROM _ev WHERE label IS NOT NULL) e
                           LEFT JOIN options o ON o.pk = e.pk AND o.label = e.label
                           WHERE e.j[1] = 'reject'""")
        self.db.execute("CREATE OR REPLACE TEMP TABLE _keys AS SELECT DISTINCT pk, user_id FROM _ev")
        self._rederive_rejd()
        self.db.execute("DROP TABLE _ev")

    def _rederive_rejd(self) -> None:
        """Recompute `rejd` for the (pk, user_id) pairs in the temp table _keys."""
        self.db.execute("DELETE FROM rejd USING _keys WHERE rejd.pk = _keys.pk AND rejd.user_id = _keys.user_id")
        self.db.execute("""INSERT INTO rejd SELECT ov.user_id, ov.pk, ov.kind, ov.difficulty, ov.reason_code
                           FROM ov JOIN _keys ON _keys.pk = ov.pk AND _keys.user_id = ov.user_id
                           JOIN pv ON pv.pk = ov.pk AND pv.user_id = ov.user_id
                                  AND pv.verdict IN ('accept', 'reject')
                           WHERE ov.verdict = 'reject' AND ov.kind <> 'target'""")
        self.db.execute("DROP TABLE _keys")

    def _rollouts(self) -> None:
        self._append("rollouts", """SELECT id, run_id, hash(puzzle_id) AS pk, total, exact,
                   CAST(json_extract_string(chosen, '$[*]') AS VARCHAR[]) AS chosen FROM _delta""")

    def _pull_set_items(self, conn) -> None:
        rows = conn.execute(select(SetItem.id, CuratedSet.name, SetItem.record_json)
                            .join(CuratedSet, CuratedSet.id == SetItem.set_id)
                            .where(SetItem.id > self.cursor["set_items"]).order_by(SetItem.id)).all()
        if not rows:
            return
        self.cursor["set_items"] = rows[-1][0]
        out = {"set_name": [], "puzzle_id": [], "label": [], "kind": []}
        for _, name, rec_json in rows:      # a set re-letters options: keep its label -> kind map
            rec = json.loads(rec_json)
            for o in rec["options"]:
                out["set_name"].append(name)
                out["puzzle_id"].append(rec["id"])
                out["label"].append(o["label"])
                out["kind"].append(o["kind"])
        self.db.register("_delta", pa.table(out))
        self._append("set_options", "SELECT set_name, hash(puzzle_id) AS pk, label, kind FROM _delta")
        self.db.unregister("_delta")

    def query(self, sql: str, params: list | None = None) -> list[dict]:
        with self.lock:
            rel = self.db.execute(sql, params or [])
            names = [d[0] for d in rel.description]
            return [dict(zip(names, r)) for r in rel.fetchall()]


_caches: dict[str, _Cache] = {}
_caches_lock = threading.Lock()


def _cache(engine: Engine) -> _Cache:
    key = engine.url.render_as_string(hide_password=False)
    with _caches_lock:
        c = _caches.get(key)
        if c is None:
            c = _caches[key] = _Cache(engine)
    c.refresh()
    return c


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
    if not _has_options(c := _cache(engine)):
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
    if not _has_options(c := _cache(engine)):
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
    if not _has_options(c := _cache(engine)):
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
    c = _cache(engine)
    return c.query(f"""
        SELECT u.name AS curator, CAST(pv.created_at AS DATE) AS day, count(*) AS verdicts,
               round(median(pv."seconds"), 2) AS median_seconds,
               round(3600.0 / NULLIF(median(pv."seconds"), 0), 1) AS per_hour
        FROM pv JOIN users u ON u.id = pv.user_id WHERE {decisive_sql("pv.verdict")}
        GROUP BY ALL ORDER BY day, curator""")


def curator_agreement(engine: Engine) -> list[dict]:
    """Per pair of curators: puzzles both judged (accept/reject), observed agreement, Cohen's kappa."""
    c = _cache(engine)
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
    c = _cache(engine)
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


def _has_options(c: _Cache) -> bool:
    return "options" in c.tables


QUESTIONS = {
    "acceptance_by_kind": acceptance_by_kind,
    "acceptance_by_hardness": acceptance_by_hardness,
    "acceptance_by_video": acceptance_by_video,
    "curator_throughput": curator_throughput,
    "curator_agreement": curator_agreement,
    "model_picks_by_kind": model_picks_by_kind,
}

"""The per-database DuckDB copy the analytics questions read: the insert-only tables pulled
incrementally, and the current verdicts re-derived from the history (see db.analytics)."""
from __future__ import annotations

import json
import threading

import duckdb
import pyarrow as pa
from sqlalchemy import Text, cast, func, select
from sqlalchemy.engine import Engine

import db.analytics.pull as pull  # the module (tests lower BULK_MIN_ROWS); not the package: no cycle
from db.analytics.pull import adbc_connect, arrow_adbc, arrow_table
from db.engine import read_engine
from db.models import Option, Puzzle, Video
from db.models.curation import CuratedSet, OptionVerdict, SetItem, User, VerdictEvent
from db.models.runs import Rollout, Run

# (name, DuckDB type) of each pulled column
_OPTION_COLS = [("id", "BIGINT"), ("puzzle_id", "VARCHAR"), ("label", "VARCHAR"), ("kind", "VARCHAR"),
                ("difficulty", "DOUBLE")]
_EVENT_COLS = [("id", "BIGINT"), ("user_id", "BIGINT"), ("puzzle_id", "VARCHAR"), ("label", "VARCHAR"),
               ("after", "VARCHAR"), ("created_at", "VARCHAR")]
_ROLLOUT_COLS = [("id", "BIGINT"), ("run_id", "VARCHAR"), ("puzzle_id", "VARCHAR"), ("chosen", "VARCHAR"),
                 ("total", "DOUBLE"), ("exact", "DOUBLE"), ("checkpoint_id", "BIGINT"), ("sample_index", "BIGINT"),
                 ("format", "DOUBLE"), ("selection", "DOUBLE"), ("order", "DOUBLE"), ("advantage", "DOUBLE"),
                 ("length", "BIGINT")]


MEMO_SIZE = 256    # answers `StoreCopy.memo` keeps (a page of 25 rows, a few hundred groups each)

# The stamp of the store: each insert-only table's last id, the puzzle count, and the whole contents
# of the two small tables that may change in place. One statement, one snapshot, one round trip:
# what every call pays when nothing changed (`StoreCopy.refresh`). The small tables' rows are
# aggregated in no fixed order, so an unchanged table may (rarely) read as changed: one more
# re-pull, never a stale copy.
_STAMP_KEYS = ("options", "events", "rollouts", "set_items", "puzzles", "users", "runs")


def _last(col):
    return select(func.max(col)).scalar_subquery()


def _rows_text(a, b):
    return select(func.aggregate_strings(a + "\x1f" + b, "\x1e")).scalar_subquery()


_STAMP = select(_last(Option.id), _last(VerdictEvent.id), _last(Rollout.id), _last(SetItem.id),
                select(func.count()).select_from(Puzzle).scalar_subquery(),
                _rows_text(cast(User.id, Text), User.name),
                _rows_text(Run.id, func.coalesce(Run.set_name, "")))


class StoreCopy:
    """Per-database DuckDB copy of the insert-only tables, grown by the rows past each table's last id.
    `pv`/`ov` (current puzzle/option verdicts) are kept up to date from each new batch of events."""

    def __init__(self, engine: Engine):
        self.engine = read_engine(engine)
        self.lock = threading.RLock()
        self.db = duckdb.connect()
        self.cursor = {"options": 0, "events": 0, "rollouts": 0, "set_items": 0}
        self.n_puzzles = -1
        self.stamp: tuple | None = None     # the last refresh's `_STAMP` row
        self.refreshes = self.skipped = 0   # refreshes that pulled / found nothing changed (tests read them)
        self.tables: set[str] = set()
        # tables other modules derive from the copy (name -> `version()` when built): rebuilt only
        # when the copy has grown since (db/runs/answers_table.py)
        self.derived: dict[str, tuple] = {}
        # answers other modules computed from the copy, keyed with the `version` they were computed
        # at (`memo`): a repeated question costs nothing until the tables it reads grow
        self._memo: dict = {}
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
        """Bring the copy up to date with the store. One cheap statement (`_stamp`) says whether
        anything changed since the last refresh; only then are the changed tables pulled. The stamp
        is read on every call, never skipped for a while, so a write that committed before this call
        (by this process or another) is always in the copy after it."""
        with self.lock, self.engine.connect() as conn:
            stamp = conn.execute(_STAMP).one()
            if stamp == self.stamp:
                self.skipped += 1
                return
            last = dict(zip(_STAMP_KEYS, stamp))
            self._pull(conn, "options", Option.id, last["options"],
                       select(Option.id, Option.puzzle_id, Option.label, Option.kind, Option.difficulty),
                       _OPTION_COLS, self._options)
            # JSON and timestamps come as text (no per-row Python parsing); DuckDB parses them.
            self._pull(conn, "events", VerdictEvent.id, last["events"],
                       select(VerdictEvent.id, VerdictEvent.user_id, VerdictEvent.puzzle_id, VerdictEvent.label,
                              cast(VerdictEvent.after, Text), cast(VerdictEvent.created_at, Text)),
                       _EVENT_COLS, self._events)
            self._pull(conn, "rollouts", Rollout.id, last["rollouts"],
                       select(Rollout.id, Rollout.run_id, Rollout.puzzle_id, cast(Rollout.chosen_labels, Text),
                              Rollout.total, Rollout.exact, Rollout.checkpoint_id, Rollout.sample_index,
                              Rollout.format, Rollout.selection, Rollout.order, Rollout.advantage,
                              func.length(Rollout.completion)),
                       _ROLLOUT_COLS, self._rollouts)
            if last["set_items"] is not None and last["set_items"] > self.cursor["set_items"]:
                self._pull_set_items(conn)
            n = last["puzzles"]
            if n != self.n_puzzles:   # puzzles are only ever added; re-pull the small id->video map
                self.db.register("_delta", arrow_table(conn, select(Puzzle.id, Puzzle.video_id), ["id", "video_id"]))
                self.db.execute("CREATE OR REPLACE TABLE puzzles AS SELECT hash(id) AS pk, id, video_id FROM _delta")
                self.db.unregister("_delta")
                self.tables.add("puzzles")
                self.n_puzzles = n
                # videos come with their puzzles: the file name the answers table shows
                self._replace("videos", arrow_table(conn, select(Video.id, Video.path), ["id", "path"]))
            # users and runs may change in place (a run re-indexed, an account deleted): their
            # contents are in the stamp, and a change re-pulls the whole (small) table
            if self.stamp is None or last["users"] != self.stamp_of("users"):
                self._replace("users", arrow_table(conn, select(User.id, User.name), ["id", "name"]))
            if self.stamp is None or last["runs"] != self.stamp_of("runs"):
                self._replace("runs", arrow_table(conn, select(Run.id, Run.set_name), ["id", "set_name"]))
            self.stamp = stamp
            self.refreshes += 1

    def stamp_of(self, key: str):
        return None if self.stamp is None else self.stamp[_STAMP_KEYS.index(key)]

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
        pull.BULK_MIN_ROWS rows are expected, else through the pooled connection's DBAPI cursor.
        `cols`: (name, DuckDB type) of each column."""
        names, types = [n for n, _ in cols], [t for _, t in cols]
        adbc = adbc_connect(self.engine) if n_hint > pull.BULK_MIN_ROWS else None   # read at call time (tests lower it)
        if adbc is None:
            return arrow_table(conn, stmt, names, types)
        try:
            return arrow_adbc(adbc, conn.dialect, stmt, names)
        finally:
            adbc.close()

    def _pull(self, conn, key, id_col, last: int | None, stmt, cols, transform=None) -> None:
        """Append the rows past the table's cursor; `last`: its largest id in the stamp."""
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
            arrow_table(conn, select(ov.user_id, ov.puzzle_id, ov.label, ov.reason_code).where(rej, ov.option_id > known),
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
                   CAST(json_extract_string(chosen, '$[*]') AS VARCHAR[]) AS chosen, checkpoint_id,
                   sample_index, format, selection, "order", advantage, length FROM _delta""")

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

    def version(self, *tables: str) -> tuple:
        """Changes whenever a refresh pulled new rows into any of `tables` (keys of `cursor`, or
        "puzzles", whose refresh also brings the videos; all of them when none is named). Every
        pulled table is insert-only, so an unchanged version means unchanged contents."""
        now = {**self.cursor, "puzzles": self.n_puzzles}
        return tuple(now[t] for t in (tables or now))

    def memo(self, key, version: tuple, compute):
        """`compute()`'s answer for `key`, computed again only when `version` (what it reads, from
        `version(...)`) changed since. Call with `lock` held. Bounded: the oldest answers go first."""
        hit = self._memo.get(key)
        if hit is not None and hit[0] == version:
            return hit[1]
        value = compute()
        self._memo.pop(key, None)
        self._memo[key] = (version, value)
        while len(self._memo) > MEMO_SIZE:
            self._memo.pop(next(iter(self._memo)))
        return value

    def query(self, sql: str, params: list | None = None) -> list[dict]:
        with self.lock:
            rel = self.db.execute(sql, params or [])
            names = [d[0] for d in rel.description]
            return [dict(zip(names, r)) for r in rel.fetchall()]


_caches: dict[str, StoreCopy] = {}
_caches_lock = threading.Lock()


def built(engine: Engine) -> bool:
    """Whether this process already holds a copy of the engine's database (the first call builds
    it: every row pulled, tens of seconds at 10^5 answers; later calls pull only what is new)."""
    c = _caches.get(engine.url.render_as_string(hide_password=False))
    return c is not None and c.stamp is not None


def store_copy(engine: Engine) -> StoreCopy:
    key = engine.url.render_as_string(hide_password=False)
    with _caches_lock:
        c = _caches.get(key)
        if c is None:
            c = _caches[key] = StoreCopy(engine)
    c.refresh()
    return c

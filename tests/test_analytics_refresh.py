"""The analytics copy's refresh (db/analytics/cache.py) on both engines: a call that finds nothing
changed costs one statement and pulls nothing; a write made right before a call is in its answer
(answers, verdicts, a new curator, a run's set re-indexed in place); a verdict does not rebuild the
answers table's derived tables or recompute its group intervals (db/runs/answers_table.py)."""
from __future__ import annotations

import pytest
from sqlalchemy import event, update

from db import analytics, review
from db.analytics.cache import store_copy
from db.models.runs import Rollout, Run
from db.runs import answers_table as at
from db.runs import rollout_views as rd
from db.users.accounts import add_user

RUN = "fresh-run"


@pytest.fixture
def copy_db(store_db):
    """`store_db` with no analytics copy of it in the process before or after the test."""
    key = store_db.engine.url.render_as_string(hide_password=False)
    analytics._caches.pop(key, None)
    yield store_db
    analytics._caches.pop(key, None)


class Statements:
    """The SQL statements sent through SQLAlchemy on an engine while counting."""

    def __init__(self, engine):
        self.engine, self.sql = engine, []

    def __enter__(self):
        event.listen(self.engine, "before_cursor_execute", self._seen)
        return self

    def __exit__(self, *exc):
        event.remove(self.engine, "before_cursor_execute", self._seen)

    def _seen(self, conn, cursor, statement, parameters, context, executemany):
        if not statement.startswith("BEGIN"):      # SQLite's deferred BEGIN: no query, no read
            self.sql.append(statement)


def _answer(s, pid: str, sample: int, exact: float) -> None:
    s.add(Rollout(run_id=RUN, checkpoint_id=None, puzzle_id=pid, sample_index=sample,
                  completion="<think>t</think><answer>A</answer>", chosen_labels=["A"], format=1.0,
                  selection=exact, order=exact, exact=exact, total=exact, advantage=0.0))


def test_an_unchanged_store_costs_one_statement(copy_db):
    eng = copy_db.engine
    with copy_db.Session() as s:
        a = add_user(s, "a", "curator", "a-password-1")[0].id
        s.commit()
        review.submit_verdict(s, a, copy_db.records[0]["id"], "accept", seconds=2.0)
    first = analytics.acceptance_by_kind(eng)
    c = store_copy(eng)
    pulls, version = c.refreshes, c.version()
    with Statements(eng) as seen:
        again = analytics.acceptance_by_kind(eng)
        analytics.curator_throughput(eng)
    assert again == first
    assert len(seen.sql) == 2                     # one stamp per question, nothing pulled
    assert c.refreshes == pulls and c.version() == version


def test_a_write_is_in_the_next_answer(copy_db):
    eng = copy_db.engine
    recs = sorted(copy_db.records, key=lambda r: r["id"])
    with copy_db.Session() as s:
        s.add(Run(id=RUN, name=RUN, kind="rollout", model_path="m", set_name=None, config={}, status="done"))
        s.flush()
        _answer(s, recs[0]["id"], 0, 1.0)
        s.commit()
    key = rd.source_key(RUN, None)
    rows, n = at.page(eng, key, at.AnswersQuery())
    assert n == 1 and rows[0]["exact"] == 1.0
    groups = at.groups(eng, key, "kind", at.AnswersQuery())
    with Statements(eng) as seen:             # asked again with no write between: the stamp only
        assert at.page(eng, key, at.AnswersQuery()) == (rows, n)
    assert len(seen.sql) == 1
    with copy_db.Session() as s:              # a second answer on the same puzzle, one on another
        _answer(s, recs[0]["id"], 1, 0.0)
        _answer(s, recs[1]["id"], 0, 0.0)
        s.commit()
    rows, n = at.page(eng, key, at.AnswersQuery(sort="puzzle"))
    assert n == 2 and [r["answers"] for r in rows] == [2, 1] and rows[0]["exact"] == 0.5
    assert at.groups(eng, key, "kind", at.AnswersQuery()) != groups

    with copy_db.Session() as s:              # a new curator's first verdict, named at once
        b = add_user(s, "newcomer", "curator", "a-password-1")[0].id
        s.commit()
        review.submit_verdict(s, b, recs[2]["id"], "accept", seconds=5.0)
    assert {r["curator"] for r in analytics.curator_throughput(eng)} == {"newcomer"}

    c = store_copy(eng)                       # a run re-indexed in place: its set changes, no row is added
    assert c.query("SELECT set_name FROM runs WHERE id = ?", [RUN]) == [{"set_name": None}]
    with copy_db.Session() as s:
        s.execute(update(Run).where(Run.id == RUN).values(set_name="s-later"))
        s.commit()
    assert store_copy(eng).query("SELECT set_name FROM runs WHERE id = ?", [RUN]) == [{"set_name": "s-later"}]


def test_a_verdict_keeps_the_answers_tables_and_intervals(copy_db, monkeypatch):
    eng = copy_db.engine
    recs = sorted(copy_db.records, key=lambda r: r["id"])
    with copy_db.Session() as s:
        s.add(Run(id=RUN, name=RUN, kind="rollout", model_path="m", set_name=None, config={}, status="done"))
        s.flush()
        for i, r in enumerate(recs):
            for g in range(3):
                _answer(s, r["id"], g, float((i + g) % 2))
        a = add_user(s, "a", "curator", "a-password-1")[0].id
        s.commit()
    key = rd.source_key(RUN, None)
    bootstraps = []
    real = at.cluster_sums_cis
    monkeypatch.setattr(at, "cluster_sums_cis", lambda *a, **k: bootstraps.append(1) or real(*a, **k))
    first = at.groups(eng, key, "kind", at.AnswersQuery())
    assert bootstraps
    c = store_copy(eng)
    derived = dict(c.derived)
    with copy_db.Session() as s:
        review.submit_verdict(s, a, recs[0]["id"], "reject", seconds=1.0)
    n = len(bootstraps)
    assert at.groups(eng, key, "kind", at.AnswersQuery()) == first
    assert len(bootstraps) == n and c.derived == derived       # nothing recomputed
    assert analytics.curator_throughput(eng)[0]["verdicts"] == 1   # while the verdict is in the copy

"""The Stats page in Chromium, on an empty data directory and on a populated one. Empty: every
question says in one sentence what produces its data (what the model picks: a rollout; agreement:
two curators on the same puzzles), and nothing reads "Infinity". Populated (the web test data: real
puzzles, stored model answers, plus two curators judging the same puzzles at overlap 2): the model's
picks and the curators' kappa are drawn as bars, and videos are named by file name, never by id."""
from __future__ import annotations

import shutil

import pytest
from fixtures_web import PASSWORDS, login, shot
from sqlalchemy import select

pytestmark = [pytest.mark.browser, pytest.mark.slow]
QUESTIONS = ("acceptance_by_kind", "acceptance_by_hardness", "acceptance_by_video", "curator_throughput",
             "curator_agreement", "model_picks_by_kind")


def _two_curators_on_the_same_puzzles(Session) -> None:
    from db.models import Puzzle
    from db.review import set_overlap, submit_verdict
    from db.users.accounts import add_user
    with Session() as s:
        set_overlap(s, 2)
        a = add_user(s, "cur-a", "curator", "cur-a-password")[0].id
        b = add_user(s, "cur-b", "curator", "cur-b-password")[0].id
        s.commit()
        pids = s.scalars(select(Puzzle.id).order_by(Puzzle.id)).all()
        assert len(pids) >= 4, pids
        for i, pid in enumerate(pids):
            submit_verdict(s, a, pid, "accept" if i % 2 == 0 else "reject")
            submit_verdict(s, b, pid, "accept" if i % 2 == 0 or i == 1 else "reject")
        s.commit()


@pytest.fixture(scope="module")
def stats_servers(web_data, tmp_path_factory):
    """(empty server, populated server, the populated one's Session): `mvp serve` on an empty data
    directory (one researcher) and on a copy of the web test data with agreement to show."""
    from fixtures_security import Server, sqlite_copy
    from fixtures_web import free_port

    from db.engine import open_db
    from db.users.accounts import add_user
    src = web_data[0]
    base = tmp_path_factory.mktemp("stats")
    empty, full = base / "empty", base / "full"
    empty.mkdir()
    S_empty = open_db(f"sqlite:///{empty / 'mvp.sqlite'}", empty)
    with S_empty() as s:
        add_user(s, "rhea", "researcher", PASSWORDS["rhea"])
        s.commit()
    shutil.copytree(src, full, ignore=shutil.ignore_patterns("mvp.sqlite*"))
    sqlite_copy(src / "mvp.sqlite", full / "mvp.sqlite")
    S_full = open_db(f"sqlite:///{full / 'mvp.sqlite'}", full)
    _two_curators_on_the_same_puzzles(S_full)
    servers = [Server(d, f"sqlite:///{d / 'mvp.sqlite'}", free_port(), base / f"{d.name}.log").start()
               for d in (empty, full)]
    yield servers[0], servers[1], S_full
    for srv in servers:
        srv.stop()


def _open_stats(browser, srv):
    ctx, page = login(browser, srv, "rhea", path="/stats/")
    page.wait_for_selector("#stats-model_picks_by_kind .mvp-chart", timeout=60000)
    page.wait_for_selector("#stats-status .mvp-chart", timeout=30000)
    return ctx, page


def test_empty_stats_page_says_what_produces_each_chart(stats_servers, browser):
    empty, _, _ = stats_servers
    ctx, page = _open_stats(browser, empty)
    try:
        for q in QUESTIONS:
            note = page.inner_text(f"#stats-{q} .mvp-chart-note")
            assert note.count(".") >= 1 and "\n" not in note.strip(), (q, note)
        assert "Rollouts page" in page.inner_text("#stats-model_picks_by_kind")
        assert "two curators judging the same puzzles" in page.inner_text("#stats-curator_agreement")
        assert "synthesize" in page.inner_text("#stats-status")
        assert page.locator("#stats-model_picks_by_kind svg").count() == 0    # a sentence, not an empty frame
        text = page.evaluate("() => document.body.textContent")
        assert "Infinity" not in text and "NaN" not in text
        shot(page, "stats_empty")
    finally:
        ctx.close()


def test_populated_stats_page_draws_model_picks_and_agreement(stats_servers, browser):
    from db.models import Video
    _, full, Session = stats_servers
    ctx, page = _open_stats(browser, full)
    try:
        picks = page.locator("#stats-model_picks_by_kind rect[data-bar]")
        assert picks.count() >= 2, page.inner_text("#stats-model_picks_by_kind")
        assert "target" in [picks.nth(i).get_attribute("data-bar") for i in range(picks.count())]
        pair = page.locator("#stats-curator_agreement rect[data-bar]")
        # the copied web data may hold earlier tests' verdicts too (other pairs): ours must be drawn
        assert "cur-a / cur-b" in [pair.nth(i).get_attribute("data-bar") for i in range(pair.count())]
        assert "cur-a / cur-b" in page.inner_text("#stats-curator_agreement-table")
        assert page.locator("#stats-status rect[data-bar]").count() >= 1
        by_video = page.inner_text("#stats-acceptance_by_video")
        assert "bikes.mp4" in by_video and "trailer_a.mp4" in by_video
        text = page.evaluate("() => document.body.textContent")
        with Session() as s:
            ids = s.scalars(select(Video.id)).all()
        assert ids and not [v for v in ids if v in text]                        # never a video's id
        assert "Infinity" not in text and "NaN" not in text
        shot(page, "stats_populated")
    finally:
        ctx.close()

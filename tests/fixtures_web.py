"""Fixtures for the browser tests: puzzles synthesized by the real `mvp synth` from two real sample
videos, users of each role, rollouts scored by the real reward, the app (`mvp serve`) started as a
subprocess on a free port, and Debian's Chromium driven by Playwright."""
from __future__ import annotations

import shutil
from dataclasses import dataclass
from pathlib import Path

import pytest
from testkit.cli import run_mvp
from testkit.store import store_answers  # noqa: F401  (shared with bench/web_rollouts.py)
from testkit.web import (CHROMIUM_ARGS, TEST_CHROMIUM, Server, SharedLogins,  # noqa: F401  (shared with bench/)
                         browser_login, free_port)

ROOT = Path(__file__).resolve().parent.parent
ARTIFACTS = ROOT / "test-artifacts"
PASSWORDS = {"cora": "cora-pass-1", "rhea": "rhea-pass-1", "ada": "ada-pass-12"}
ROLES = {"cora": "curator", "rhea": "researcher", "ada": "admin"}
G = 4
RUN_ID = "web-test-run"


@dataclass
class WebApp:
    url: str
    data_dir: Path
    db_url: str
    outside: Path            # a secret file next to (not inside) the data directory
    Session: object          # sessionmaker on the app's database
    server_log: Path | None = None   # `mvp serve`'s output (its tail is shown beside a failed test)

    def user_id(self, name: str) -> int:
        from db.users.accounts import get_user
        with self.Session() as s:
            return get_user(s, name).id


def two_video_corpus(sample_videos, trailer_clips, base: Path) -> Path:
    """BASE/videos with a trailer segment and bikes (a slow pan gives no puzzle since
    near-duplicates are refused)."""
    videos = base / "videos"
    videos.mkdir()
    shutil.copy(trailer_clips["trailer_a"], videos / "trailer_a.mp4")
    shutil.copy(sample_videos["bikes"], videos / "bikes.mp4")
    return videos


def two_video_synth(sample_videos, trailer_clips, tmp_path_factory) -> Path:
    """BASE/data: `mvp synth --per-video 3` of two_video_corpus into a fresh data directory, run once per test
    run (tests/build_once.py) for every studio made from it; only read (each studio copies it)."""
    from build_once import build_once

    def build(base: Path) -> None:
        videos, data = two_video_corpus(sample_videos, trailer_clips, base), base / "data"
        run_mvp("synth", videos, "--data", data, "--db", f"sqlite:///{data / 'mvp.sqlite'}", "--per-video", "3",
                "--quiet", timeout=300)
    return build_once(tmp_path_factory, "two-video-synth", build) / "data"


@pytest.fixture(scope="session")
def web_data(sample_videos, trailer_clips, tmp_path_factory):
    """(data_dir, db_url): puzzles from a trailer segment + bikes, three users, stored rollouts."""
    from db.engine import open_db
    from db.users.accounts import add_user
    base = tmp_path_factory.mktemp("web")
    data = base / "data"
    db_url = f"sqlite:///{data / 'mvp.sqlite'}"
    copy_data_dir(two_video_synth(sample_videos, trailer_clips, tmp_path_factory), data)
    Session = open_db(db_url, data)
    with Session() as s:
        for name, pw in PASSWORDS.items():
            add_user(s, name, ROLES[name], pw)
        s.commit()
    store_answers(Session, RUN_ID, "rollout", "tiny-random-qwen25vl", 5, "ckpt-5", G, 7, zero_variance_first=True)
    (base / "secret.txt").write_text("TOP SECRET outside the data dir")
    copy_data_dir(data, base / "pristine")
    return data, db_url, base / "secret.txt", Session


def copy_data_dir(data: Path, dst: Path) -> None:
    """DST: a copy of the data directory DATA, its SQLite database copied consistently."""
    from fixtures_security import sqlite_copy
    shutil.copytree(data, dst, ignore=shutil.ignore_patterns("mvp.sqlite*"))
    sqlite_copy(data / "mvp.sqlite", dst / "mvp.sqlite")


def copy_web_data(web_data, dst: Path) -> None:
    """DST: the web test data as web_data made it, before any test used it (the shared web app's tests
    add runs, verdicts and jobs to the live copy; a copy taken from it would depend on test order)."""
    copy_data_dir(web_data[0].parent / "pristine", dst)


@pytest.fixture(scope="session")
def web_app(web_data):
    """`mvp serve` on a free port, as a user would start it."""
    data, db_url, outside, Session = web_data
    srv = Server(data, db_url, free_port(), data.parent / "serve.log").start()
    yield WebApp(srv.url, data, db_url, outside, Session, srv.log_path)
    srv.stop()


@pytest.fixture(scope="session")
def browser():
    from playwright.sync_api import sync_playwright
    assert Path(TEST_CHROMIUM).exists(), "install Debian's headless chromium: apt-get install chromium-headless-shell"
    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=TEST_CHROMIUM, headless=True, args=CHROMIUM_ARGS)
        yield b
        b.close()


def login(browser, app: WebApp | str, name: str, password: str | None = None, path: str = "/"):
    """A fresh browser context logged in as `name` on `app` (or a base URL); returns (context, page) at `path`."""
    return browser_login(browser, app if isinstance(app, str) else app.url, name, password or PASSWORDS[name], path)


@pytest.fixture(scope="session")
def shared_logins(browser):
    """One logged-in context per (studio, user, options) for this worker's whole run (testkit/web.py)."""
    logins = SharedLogins(browser)
    yield logins
    logins.close()


@pytest.fixture
def open_as(shared_logins):
    """`open_as(app, name, path="/", password=None, **context_options)` -> a new tab at `path` in the
    user's shared logged-in context; the test's tabs are closed after it, pass or fail. For tests that
    stay within their session (testkit/web.py SharedLogins); the others use `login`."""
    pages = []

    def open_page(app: WebApp | str, name: str, path: str = "/", password: str | None = None, **options):
        url = app if isinstance(app, str) else app.url
        page = shared_logins.page(url, name, password or PASSWORDS[name], path, **options)
        pages.append(page)
        return page
    yield open_page
    for page in pages:
        if not page.is_closed():
            page.close()


def shot(page, name: str) -> None:
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / f"{name}.png"), full_page=True)


@pytest.fixture
def fresh_curator(web_app):
    """A curator of its own, with every puzzle open to it whatever earlier tests judged (overlap k raised
    to the maximum while the test runs, restored after): the test needs no data other tests leave."""
    import uuid

    from db import review
    from db.users.accounts import add_user
    name, password = f"skipper{uuid.uuid4().hex[:8]}", "a-long-password-for-skips"
    with web_app.Session() as s:
        add_user(s, name, "curator", password)
        old_k = review.overlap_k(s)
        s.commit()
        review.set_overlap(s, 50)
        s.commit()
    yield name, password
    with web_app.Session() as s:
        review.set_overlap(s, old_k)
        s.commit()

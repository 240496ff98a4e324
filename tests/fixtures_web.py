"""Fixtures for the browser tests: puzzles synthesized by the real `mvp synth` from two real sample
videos, users of each role, rollouts scored by the real reward, the app (`mvp serve`) started as a
subprocess on a free port, and Debian's Chromium driven by Playwright."""
from __future__ import annotations

import json
import os
import random
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
ARTIFACTS = ROOT / "test-artifacts"
CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
                 "--disable-sync", "--no-first-run", "--disable-quic"]
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

    def user_id(self, name: str) -> int:
        from db.users.accounts import get_user
        with self.Session() as s:
            return get_user(s, name).id


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Server:
    """`mvp serve` as a subprocess, as a user would start it; restartable on the same port."""

    def __init__(self, data: Path, db_url: str, port: int, log: Path, extra: list[str] | None = None):
        self.data, self.db_url, self.port, self.log_path = data, db_url, port, log
        self.extra = extra or []
        self.url = f"http://127.0.0.1:{port}"
        self.proc = None

    def start(self, timeout: float = 300) -> "Server":
        log = open(self.log_path, "a")
        self.proc = subprocess.Popen([sys.executable, "-m", "app.cli", "serve", "--data", str(self.data),
                                      "--db", self.db_url, "--port", str(self.port), *self.extra],
                                     cwd=ROOT, stdout=log, stderr=subprocess.STDOUT,
                                     env=dict(os.environ, PYTHONUNBUFFERED="1",
                                              GRADIO_TEMP_DIR=str(self.data.parent / "gradio-tmp")))
        log.close()
        deadline = time.time() + timeout
        while True:
            try:
                urllib.request.urlopen(self.url + "/login", timeout=2)
                return self
            except OSError:
                if self.proc.poll() is not None or time.time() > deadline:
                    raise RuntimeError("mvp serve did not start:\n" + self.log_path.read_text()[-3000:])
                time.sleep(0.2)

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.proc = None

    def restart(self) -> None:
        self.stop()
        self.start()


def two_video_corpus(sample_videos, trailer_clips, base: Path) -> Path:
    """BASE/videos with a trailer segment and bikes (a slow pan gives no puzzle since
    near-duplicates are refused)."""
    videos = base / "videos"
    videos.mkdir()
    shutil.copy(trailer_clips["trailer_a"], videos / "trailer_a.mp4")
    shutil.copy(sample_videos["bikes"], videos / "bikes.mp4")
    return videos


def store_answers(Session, run_id: str, kind: str, model_path: str, step: int, ckpt_path: str, g: int,
                  seed: int, zero_variance_first: bool = False) -> None:
    """A run with its base model and one checkpoint at `step`, G random answers of each per stored
    puzzle, each scored by the real reward (the web tests and bench/web_rollouts.py); with
    `zero_variance_first` the first puzzle's base group is G identical answers."""
    from sqlalchemy import select

    from db.models import Puzzle
    from db.models.runs import Checkpoint, Rollout, Run
    from mvp_core.reward import score_completion
    rng = random.Random(seed)
    with Session() as s:
        s.add(Run(id=run_id, name=run_id, kind=kind, model_path=model_path, config={}, status="done"))
        s.flush()
        ck = Checkpoint(run_id=run_id, step=step, path=ckpt_path)
        s.add(ck)
        s.flush()
        for n, row in enumerate(s.scalars(select(Puzzle).order_by(Puzzle.id))):
            rec = json.loads(row.record_json)
            labels = [o["label"] for o in rec["options"]]
            for cid in (None, ck.id):
                fixed = rng.sample(labels, len(rec["answer"]))
                for i in range(g):
                    same = zero_variance_first and n == 0 and cid is None
                    ch = fixed if same else rng.sample(labels, len(rec["answer"]))
                    text = f"<think>answer {i}: the motion suggests {ch[0]} first.</think><answer>{', '.join(ch)}</answer>"
                    t = score_completion(text, rec["answer"], labels)
                    s.add(Rollout(run_id=run_id, checkpoint_id=cid, puzzle_id=row.id, sample_index=i,
                                  completion=text, chosen_labels=t.labels, format=t.format, selection=t.selection,
                                  order=t.order, exact=t.exact, total=t.total, advantage=None))
        s.commit()


@pytest.fixture(scope="session")
def web_data(sample_videos, trailer_clips, tmp_path_factory):
    """(data_dir, db_url): puzzles from a trailer segment + bikes, three users, stored rollouts."""
    from db.engine import open_db
    from db.users.accounts import add_user
    base = tmp_path_factory.mktemp("web")
    videos, data = two_video_corpus(sample_videos, trailer_clips, base), base / "data"
    db_url = f"sqlite:///{data / 'mvp.sqlite'}"
    res = subprocess.run([sys.executable, "-m", "app.cli", "synth", str(videos), "--data", str(data), "--db", db_url,
                          "--per-video", "3", "--quiet"], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert res.returncode == 0, res.stdout + res.stderr
    Session = open_db(db_url, data)
    with Session() as s:
        for name, pw in PASSWORDS.items():
            add_user(s, name, ROLES[name], pw)
        s.commit()
    store_answers(Session, RUN_ID, "rollout", "tiny-random-qwen25vl", 5, "ckpt-5", G, 7, zero_variance_first=True)
    (base / "secret.txt").write_text("TOP SECRET outside the data dir")
    return data, db_url, base / "secret.txt", Session


@pytest.fixture(scope="session")
def web_app(web_data):
    """`mvp serve` on a free port, as a user would start it."""
    data, db_url, outside, Session = web_data
    srv = Server(data, db_url, free_port(), data.parent / "serve.log").start()
    yield WebApp(srv.url, data, db_url, outside, Session)
    srv.stop()


@pytest.fixture(scope="session")
def browser():
    from playwright.sync_api import sync_playwright
    assert Path(CHROMIUM).exists(), "install Debian's chromium: apt-get install -y chromium"
    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS)
        yield b
        b.close()


def login(browser, app: WebApp | str, name: str, password: str | None = None, path: str = "/"):
    """A fresh browser context logged in as `name` on `app` (or a base URL); returns (context, page) at `path`."""
    ctx = browser.new_context(viewport={"width": 1400, "height": 1000})
    page = ctx.new_page()
    page.goto((app if isinstance(app, str) else app.url) + path)
    page.fill("#login-user", name)
    page.fill("#login-password", password or PASSWORDS[name])
    page.click("#login-submit")
    return ctx, page


def shot(page, name: str) -> None:
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / f"{name}.png"), full_page=True)

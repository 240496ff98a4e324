"""From an empty data directory to an exported set, in Chromium: an admin allows a folder, a
researcher adds videos on the Data page (a broken file and a symlink leading out are skipped with
their reasons; a folder outside the allowed roots is refused), synthesizes them as a background job
with a progress bar and summary, runs the shortcut audit; two curators solve then vet every puzzle
(nothing tells them the targets before they answer); the researcher freezes a set split by video,
exports it in each format as a download, and the Hugging Face export loads with `datasets`.

One test walks the journey on one server, step by step (each step needs the one before), so it passes
alone and in any order of the suite."""
from __future__ import annotations

import hashlib
import json
import os
import shutil
import zipfile
from pathlib import Path

import pytest
from curate_steps import assert_no_leak, solve_and_judge, watch_api
from fixtures_web import Server, WebApp, free_port, login, shot
from sqlalchemy import select

pytestmark = [pytest.mark.browser, pytest.mark.slow]
USERS = {"ada": ("admin", "ada-pass-12"), "rhea": ("researcher", "rhea-pass-1"),
         "cora": ("curator", "cora-pass-1"), "cody": ("curator", "cody-pass-1")}


@pytest.fixture()
def fresh(sample_videos, trailer_clips, tmp_path):
    """`mvp serve` over an empty data directory (users only), and the folders a user would point at."""
    from db.engine import open_db
    from db.review import set_overlap
    from db.users.accounts import add_user
    base = tmp_path / "fresh"
    base.mkdir()
    videos, outside, data = base / "videos", base / "outside", base / "data"
    videos.mkdir()
    outside.mkdir()
    data.mkdir()
    shutil.copy(trailer_clips["trailer_a"], videos / "trailer_a.mp4")
    shutil.copy(sample_videos["bikes"], videos / "bikes.mp4")
    (videos / "broken.mp4").write_bytes(b"not a video at all" * 100)
    shutil.copy(sample_videos["carphone_pristine"], outside / "carphone.mp4")
    os.symlink(outside / "carphone.mp4", videos / "escape.mp4")
    db_url = f"sqlite:///{data / 'mvp.sqlite'}"
    Session = open_db(db_url, data)
    with Session() as s:
        for name, (role, pw) in USERS.items():
            add_user(s, name, role, pw)
        s.commit()
        set_overlap(s, 2)                    # both curators review every puzzle
    srv = Server(data, db_url, free_port(), base / "serve.log").start()
    yield {"app": WebApp(srv.url, data, db_url, base / "none", Session), "videos": videos, "outside": outside,
           "base": base}
    srv.stop()


def _login(browser, fresh, name: str, path: str):
    return login(browser, fresh["app"], name, USERS[name][1], path=path)


def _admin_allows_a_folder(fresh, browser):
    ctx, page = _login(browser, fresh, "ada", "/admin/")
    page.wait_for_selector("#admin-roots textarea", timeout=30000)
    page.fill("#admin-roots textarea", str(fresh["videos"]))
    page.click("#admin-save-roots")
    page.wait_for_selector("#admin-roots-msg:has-text('1 allowed video folders')", timeout=15000)
    ctx.close()


def _researcher_adds_videos_and_synthesizes(fresh, browser):
    ctx, page = _login(browser, fresh, "rhea", "/datasets/")
    page.wait_for_selector("#data-allowed", timeout=30000)
    assert str(fresh["videos"].resolve()) in page.inner_text("#data-allowed")
    # outside the allowed folder: refused with one line, nothing added
    page.fill("#data-folder textarea, #data-folder input", str(fresh["outside"]))
    page.click("#data-add")
    page.wait_for_selector("text=is outside the allowed folders", timeout=15000)
    page.fill("#data-folder textarea, #data-folder input", str(fresh["videos"]))
    page.click("#data-add")
    page.wait_for_selector("#data-msg:has-text('added')", timeout=15000)
    files = page.inner_text("#data-files")
    assert "escape.mp4" in files and "symlink points outside" in files and "bikes.mp4" in files
    page.fill("#data-per-video input", "2")
    page.click("#data-synth")
    page.wait_for_selector("#synth-status[data-state=running]", timeout=30000)
    shot(page, "data_synth_running")
    page.wait_for_selector("#synth-status[data-state=done]", timeout=300000)
    st = page.locator("#synth-status")
    assert st.get_attribute("data-done") == st.get_attribute("data-total") == "3"
    assert "2 videos done, 2 skipped" in page.inner_text("#synth-summary")
    skipped = page.inner_text("#synth-skipped")
    assert "broken.mp4" in skipped and "escape.mp4: symlink points outside" in skipped
    page.click("#data-audit")
    page.wait_for_selector("#data-audit-table:has-text('boundary')", timeout=120000)
    assert "histogram" in page.inner_text("#data-audit-table")
    shot(page, "data_synth_done")
    ctx.close()
    from db.models import Puzzle
    with fresh["app"].Session() as s:
        assert len(s.scalars(select(Puzzle.id)).all()) == 4


def _two_curators_solve_then_vet(fresh, browser):
    from db.review.human import per_puzzle, possibly_ambiguous
    from db.models import Puzzle
    from db.models.human import HumanAnswer
    app = fresh["app"]
    with app.Session() as s:
        pids = sorted(s.scalars(select(Puzzle.id)))
    hard = None
    for name in ("cora", "cody"):
        ctx, page = _login(browser, fresh, name, "/curate/")
        api = watch_api(page)
        page.wait_for_selector("#mvp-puzzle[data-phase]", timeout=30000)
        page.wait_for_function("() => window.mvpHotkeysInstalled && window.mvpCurate && window.mvpCurate.state()")
        done = []
        while page.get_attribute("#mvp-puzzle", "data-phase") == "answer":
            pid = page.get_attribute("#mvp-puzzle", "data-puzzle-id")
            hard = hard or pid                               # both get the first puzzle wrong
            done.append(solve_and_judge(page, app, correct=(pid != hard)))
        assert sorted(done) == pids
        shot(page, f"data_curate_{name}")
        assert_no_leak(app, api)                             # every view is blind until its answer
        assert sum(a["action"] == "answer" for a in api) == len(pids)
        ctx.close()
    with app.Session() as s:
        assert len(s.scalars(select(HumanAnswer)).all()) == 8
        rows = {r["puzzle_id"]: r for r in per_puzzle(s)}
        assert rows[hard]["exact"] == 0.0 and all(rows[p]["exact"] == 1.0 for p in pids if p != hard)
        assert [r["puzzle_id"] for r in possibly_ambiguous(s)] == [hard]


def _stats_put_humans_beside_the_solvers(fresh, browser):
    """One definition of a verdict: Stats and Curate count the same; videos by file name."""
    from db.review.human import possibly_ambiguous
    app = fresh["app"]
    with app.Session() as s:
        hard = possibly_ambiguous(s)[0]["puzzle_id"]
    ctx, page = _login(browser, fresh, "rhea", "/curate/")
    page.wait_for_selector(".mvp-progress[data-total]", timeout=30000)
    curate_count = page.inner_text(".mvp-progress")
    page.goto(app.url + "/stats/")
    page.wait_for_selector("#stats-baselines", timeout=60000)
    verdicts = page.inner_text("#stats-verdicts")
    assert verdicts.startswith("8 verdicts") and "(8 verdicts)" in curate_count
    rows = {r[0]: r for r in page.eval_on_selector_all(
        "#stats-baselines tbody tr", "trs => trs.map(tr => Array.from(tr.cells).map(c => c.innerText))")}
    assert rows["humans (curators, blind)"][2].startswith("0.750")
    assert {"shortcut: random", "shortcut: boundary", "shortcut: histogram", "chance (exact)"} <= set(rows)
    by_video = page.inner_text("#stats-human-by-video")
    assert "trailer_a.mp4" in by_video and "bikes.mp4" in by_video
    assert hard in page.inner_text("#stats-ambiguous")
    page.wait_for_function("() => /bikes\\.mp4/.test(document.querySelector('#stats-acceptance_by_video')?.innerText ?? '')",
                           timeout=30000)
    shot(page, "stats_humans")
    ctx.close()


def _freeze_with_splits_and_export(fresh, browser, tmp_path):
    from datasets import load_dataset

    from db.sets.curated import get_set, load_set
    app = fresh["app"]
    ctx, page = _login(browser, fresh, "rhea", "/datasets/")
    page.wait_for_selector("#data-sets-box", timeout=30000)
    page.fill("#data-set-name textarea, #data-set-name input", "first-set")
    for k, v in (("train", "0.5"), ("val", "0"), ("test", "0.5")):
        page.fill(f"#data-split-{k} input", v)
    page.click("#data-freeze")
    page.wait_for_selector("#data-msg:has-text('froze first-set')", timeout=30000)
    assert "first-set" in page.inner_text("#data-sets")
    with app.Session() as s:
        recs = load_set(s, "first-set")
        chash = get_set(s, "first-set").content_hash
    assert len(recs) == 4
    by_video: dict[str, set] = {}
    for r in recs:
        by_video.setdefault(r["video"]["id"], set()).add(r.get("split"))
    assert all(len(v) == 1 for v in by_video.values())        # no video in two splits
    assert {r["split"] for r in recs} == {"train", "test"}
    sets_text = page.inner_text("#data-sets")
    assert "first-set" in sets_text
    shot(page, "data_sets")
    out = {}
    for fmt in ("jsonl", "hf", "video-r1"):
        page.check(f"#data-export-format input[value='{fmt}']")
        page.click("#data-export")
        page.wait_for_selector(f"#data-download[download*='-{fmt}-']", timeout=60000)
        with page.expect_download() as dl:
            page.click("#data-download")
        zpath = tmp_path / f"{fmt}.zip"
        dl.value.save_as(zpath)
        out[fmt] = tmp_path / fmt
        with zipfile.ZipFile(zpath) as z:
            z.extractall(out[fmt])
    ctx.close()
    assert hashlib.sha256((out["jsonl"] / "puzzles.jsonl").read_bytes()).hexdigest() == chash
    ds = load_dataset(str(out["hf"]), cache_dir=str(tmp_path / "hf-cache"))
    assert sum(len(v) for v in ds.values()) == 4
    first = next(iter(ds.values()))[0]
    assert len(first["options"]) == len(first["option_labels"]) and first["answer"]
    items = [i for f in sorted(out["video-r1"].glob("*.json")) for i in json.loads(f.read_text())]   # one per split
    assert len(items) == 4 and all((out["video-r1"] / i["path"]).is_file() for i in items)


def test_from_an_empty_folder_to_an_exported_set(fresh, browser, tmp_path):
    _admin_allows_a_folder(fresh, browser)
    _researcher_adds_videos_and_synthesizes(fresh, browser)
    _two_curators_solve_then_vet(fresh, browser)
    _stats_put_humans_beside_the_solvers(fresh, browser)
    _freeze_with_splits_and_export(fresh, browser, tmp_path)

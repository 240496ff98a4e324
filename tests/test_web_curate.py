"""A curator reviews five puzzles in Chromium with the keyboard only; the database holds exactly the
verdicts given (including a distractor rejected with a reason, and an undone verdict)."""
from __future__ import annotations

import json

import pytest
from fixtures_web import login, shot
from sqlalchemy import select

pytestmark = [pytest.mark.browser, pytest.mark.slow]


def current(page) -> str:
    return page.get_attribute("#mvp-puzzle", "data-puzzle-id")


def press_and_wait_new(page, key: str, old: str) -> str:
    page.keyboard.press(key)
    page.wait_for_function(
        "old => { const el = document.querySelector('#mvp-puzzle'); return el && el.dataset.puzzleId !== old; }",
        arg=old, timeout=15000)
    return current(page)


def distractor_index(app, pid: str) -> tuple[int, str]:
    from db.models import Puzzle
    with app.Session() as s:
        rec = json.loads(s.get(Puzzle, pid).record_json)
    i = next(i for i, o in enumerate(rec["options"]) if o["kind"] != "target")
    return i + 1, rec["options"][i]["label"]


def test_curator_reviews_five_puzzles_with_keyboard(web_app, browser):
    from db.models.curation import OptionVerdict, PuzzleVerdict, VerdictEvent
    ctx, page = login(browser, web_app, "cora", path="/curate/")
    page.wait_for_selector("#mvp-puzzle[data-puzzle-id]", timeout=30000)
    page.wait_for_function("() => document.getElementById('btn-accept') && window.mvpHotkeysInstalled")
    shot(page, "curate")
    # static/curate.js reports each verdict the server confirmed, and whether the puzzle it showed
    # at the key press (prepared in advance) was the one the server handed out
    page.evaluate("() => { window.mvpConfirmed = []; document.addEventListener('mvp-curate', "
                  "e => e.detail.type === 'confirmed' && window.mvpConfirmed.push(e.detail)); }")

    # help overlay on '?'
    page.keyboard.press("?")
    page.wait_for_selector("#mvp-help:not([hidden])")
    page.keyboard.press("?")
    page.wait_for_selector("#mvp-help", state="hidden")

    p1 = current(page)
    p2 = press_and_wait_new(page, "a", p1)                    # 1: accept

    # 2: cycle the reason once (ambiguous -> too_easy), reject one distractor by its number, accept
    page.keyboard.press("c")
    page.wait_for_selector("#mvp-reason input[value='too_easy']:checked")
    digit, label = distractor_index(web_app, p2)
    page.keyboard.press(str(digit))
    page.wait_for_selector(f".mvp-opt[data-label='{label}'][data-state='reject']")
    assert "too_easy" in page.inner_text(f".mvp-opt[data-label='{label}']")
    # blind review: no kind in the page until revealed with 'v'
    assert page.locator(".mvp-meta").count() == 0
    page.keyboard.press("v")
    page.wait_for_selector(".mvp-meta[data-kind]")
    shot(page, "curate_revealed")
    page.keyboard.press("v")
    page.wait_for_selector(".mvp-meta", state="detached")
    p3 = press_and_wait_new(page, "a", p2)

    p4 = press_and_wait_new(page, "r", p3)                    # 3: reject

    # 4: accept, then undo brings the same puzzle back with no verdict, then reject it
    p5 = press_and_wait_new(page, "a", p4)
    back = press_and_wait_new(page, "u", p5)
    assert back == p4
    assert page.locator(".mvp-mine").count() == 0             # the verdict is gone
    p5b = press_and_wait_new(page, "r", p4)
    assert p5b == p5

    after = press_and_wait_new(page, "s", p5)                 # 5: skip
    assert after != p5

    # <- goes back through this session's puzzles; -> returns
    prev = press_and_wait_new(page, "ArrowLeft", after)
    assert prev == p5
    assert "skip" in page.inner_text(".mvp-mine")
    assert press_and_wait_new(page, "ArrowRight", prev) == after

    # typing in a text box never triggers a shortcut
    n_events = _count_events(web_app, "cora")
    page.click("#mvp-note textarea, #mvp-note input")
    page.keyboard.type("a r s u 1 2")
    page.wait_for_timeout(700)
    assert current(page) == after and _count_events(web_app, "cora") == n_events
    # what was typed is the note of the next verdict: skip the 6th puzzle with it
    page.eval_on_selector("#mvp-note textarea, #mvp-note input", "e => e.blur()")
    press_and_wait_new(page, "s", after)
    assert page.input_value("#mvp-note textarea, #mvp-note input") == ""

    # decisive verdicts: p1..p4 (progress is fetched after each confirmed verdict)
    page.wait_for_function("() => document.querySelector('#mvp-mine-reviewed')?.innerText === '4'")
    shot(page, "curate_done")
    page.wait_for_function("() => window.mvpConfirmed.length >= 7")   # the last skip is recorded
    confirmed = page.evaluate("() => window.mvpConfirmed")
    assert len(confirmed) == 7 and all(c["guessed"] and c["hit"] for c in confirmed), confirmed

    uid = web_app.user_id("cora")
    with web_app.Session() as s:
        pvs = {v.puzzle_id: v for v in s.scalars(select(PuzzleVerdict).where(PuzzleVerdict.user_id == uid))}
        pv = {k: v.verdict for k, v in pvs.items()}
        notes = {k: v.reason for k, v in pvs.items() if v.reason}
        ov = {(o.puzzle_id, o.label): (o.verdict, o.reason_code)
              for o in s.scalars(select(OptionVerdict).where(OptionVerdict.user_id == uid))}
        undos = s.scalars(select(VerdictEvent).where(VerdictEvent.user_id == uid,
                                                     VerdictEvent.action == "undo")).all()
    assert pv == {p1: "accept", p2: "accept", p3: "reject", p4: "reject", p5: "skip", after: "skip"}
    assert notes == {after: "a r s u 1 2"}
    assert ov == {(p2, label): ("reject", "too_easy")}
    assert len(undos) == 1 and undos[0].puzzle_id == p4
    ctx.close()


def _count_events(app, name: str) -> int:
    from sqlalchemy import func

    from db.models.curation import VerdictEvent
    uid = app.user_id(name)
    with app.Session() as s:
        return s.scalar(select(func.count()).select_from(VerdictEvent).where(VerdictEvent.user_id == uid))


def test_deep_link_and_play_in_gap(web_app, browser):
    from db.models import Puzzle
    with web_app.Session() as s:
        pid = s.scalars(select(Puzzle.id).order_by(Puzzle.id.desc())).first()
    ctx, page = login(browser, web_app, "ada", path=f"/curate/?puzzle={pid}")
    page.wait_for_selector(f"#mvp-puzzle[data-puzzle-id='{pid}']", timeout=30000)
    page.wait_for_function("() => window.mvpHotkeysInstalled")
    page.keyboard.press("Shift+Digit1")                      # play option 1 in the gap
    page.wait_for_selector(".mvp-clip video", timeout=60000)
    src = page.get_attribute(".mvp-clip video", "src")
    assert src.startswith("/data/cache/clips/") and src.endswith(".mp4")
    assert (web_app.data_dir / src.removeprefix("/data/")).stat().st_size > 1000
    status = page.evaluate("async src => (await fetch(src)).status", src)
    assert status == 200
    shot(page, "curate_play_in_gap")
    ctx.close()

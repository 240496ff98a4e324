"""Curators in Chromium, keyboard only: solve each puzzle first (options into the gap, in order),
then vet it. Nothing the page shows or receives before the answer tells targets from distractors;
the database holds exactly the answers and verdicts given."""
from __future__ import annotations

import time

import pytest
from curate_steps import assert_blind, assert_no_leak, current, keys_for, record, wait_new, watch_api
from fixtures_web import login, shot
from sqlalchemy import select

from db.models import utcnow

pytestmark = [pytest.mark.browser, pytest.mark.slow]

def test_solve_first_then_vet(web_app, browser, fresh_curator):
    # a curator of its own: the shared one's queue depends on what earlier tests judged
    from db.models.curation import OptionVerdict, PuzzleVerdict
    from db.models.human import HumanAnswer
    name, password = fresh_curator
    ctx, page = login(browser, web_app, name, password, path="/curate/")
    api = watch_api(page)
    page.wait_for_selector("#mvp-puzzle[data-phase=answer]", timeout=30000)
    page.wait_for_function("() => window.mvpHotkeysInstalled && window.mvpCurate")
    assert "Rubric" in page.inner_text("#mvp-rubric")
    p1 = current(page)
    r1 = record(web_app, p1)
    assert_blind(page.inner_html("#mvp-stage"), r1)
    # the cards look the same to the eye too: same border, size and colour for every option
    styles = page.eval_on_selector_all("#mvp-puzzle .mvp-opt", "els => els.map(e => { const c = getComputedStyle(e);"
                                       " return [c.borderColor, c.borderStyle, c.borderWidth, c.opacity].join(); })")
    assert len(set(styles)) == 1

    # accept while blind: refused in the page, no request; picking into the gap makes no request either
    # (counted once the page's own load has settled: its progress box is fetched after the puzzle shows,
    # and under load that answer arrived inside the window below)
    deadline = time.time() + 15
    while not any(a["action"] == "progress" for a in api) and time.time() < deadline:
        page.wait_for_timeout(100)
    n_api = len(api)
    page.keyboard.press("a")
    page.wait_for_selector(".mvp-msg-warn:has-text('solve first')")
    digits = keys_for(r1, correct=True)
    for d in digits:
        page.keyboard.press(d)
    page.wait_for_function("m => document.querySelectorAll('.mvp-gap-slot.picked').length === m", arg=len(digits))
    page.wait_for_timeout(300)
    assert len(api) == n_api, api[n_api:]
    shot(page, "curate_solving")
    page.keyboard.press("Enter")
    page.wait_for_selector("#mvp-puzzle[data-phase=vet]", timeout=15000)
    # revealed: the true frames fill the gap, the answer is scored, targets are marked
    assert "exact match" in page.inner_text("#mvp-your-answer")
    gap = page.eval_on_selector_all(".mvp-gap-slot.filled img", "els => els.map(e => e.getAttribute('src'))")
    m0, m = r1["mask"]["start"], r1["mask"]["length"]
    assert gap == [f"/thumb/{f['uri']}" for f in r1["frames"][m0:m0 + m]]
    assert page.locator(".mvp-opt.target").count() == m
    shot(page, "curate_revealed")
    # vet: reject one distractor with a reason (c cycles ambiguous -> too_easy), then accept
    page.keyboard.press("c")
    page.wait_for_selector("#mvp-reason input[value='too_easy']:checked")
    di = next(i for i, o in enumerate(r1["options"]) if o["kind"] != "target")
    page.keyboard.press(str(di + 1))
    label = r1["options"][di]["label"]
    page.wait_for_selector(f".mvp-opt[data-label='{label}'][data-state='reject']")
    page.keyboard.press("a")
    p2 = wait_new(page, p1)
    assert page.get_attribute("#mvp-puzzle", "data-phase") == "answer"

    # a wrong answer, then reject the puzzle
    r2 = record(web_app, p2)
    for d in keys_for(r2, correct=False):
        page.keyboard.press(d)
    page.keyboard.press("Enter")
    page.wait_for_selector("#mvp-puzzle[data-phase=vet]", timeout=15000)
    assert "not exact" in page.inner_text("#mvp-your-answer")
    page.keyboard.press("r")
    p3 = wait_new(page, p2)

    # a reload keeps the place and the history: the same puzzle, and <- goes back to p2
    page.reload()
    page.wait_for_selector(f"#mvp-puzzle[data-puzzle-id='{p3}']", timeout=30000)
    # the tab's restored state holds p2 behind p3 before the key is pressed
    page.wait_for_function("p => { const c = window.mvpHotkeysInstalled && window.mvpCurate && window.mvpCurate.state(); "
                           "return c && c.pid === p[1] && (c.back || []).includes(p[0]); }", arg=[p2, p3], timeout=30000)
    page.keyboard.press("ArrowLeft")
    assert wait_new(page, p3) == p2 and "reject" in page.inner_text(".mvp-mine")
    page.keyboard.press("ArrowRight")
    assert wait_new(page, p2) == p3

    assert_no_leak(web_app, api)
    assert sum(a["action"] == "answer" for a in api) == 2
    uid = web_app.user_id(name)
    with web_app.Session() as s:
        ans = {a.puzzle_id: a for a in s.scalars(select(HumanAnswer).where(HumanAnswer.user_id == uid))}
        pv = {v.puzzle_id: v.verdict for v in s.scalars(select(PuzzleVerdict).where(PuzzleVerdict.user_id == uid))}
        ov = {(o.puzzle_id, o.label): (o.verdict, o.reason_code)
              for o in s.scalars(select(OptionVerdict).where(OptionVerdict.user_id == uid))}
    assert set(ans) == {p1, p2}
    assert ans[p1].labels == r1["answer"] and ans[p1].exact == 1.0 and ans[p1].total == pytest.approx(1.0)
    assert ans[p2].exact == 0.0 and ans[p2].selection == 0.0 and ans[p1].seconds > 0
    assert pv == {p1: "accept", p2: "reject"}
    assert ov == {(p1, label): ("reject", "too_easy")}
    ctx.close()


def test_play_in_gap_plays_the_picks_in_view(web_app, browser):
    from db.models import Puzzle
    with web_app.Session() as s:
        pid = s.scalars(select(Puzzle.id).order_by(Puzzle.id.desc())).first()
    rec = record(web_app, pid)
    ctx, page = login(browser, web_app, "ada", path=f"/curate/?puzzle={pid}")
    page.wait_for_selector(f"#mvp-puzzle[data-puzzle-id='{pid}'][data-phase=answer]", timeout=30000)
    page.wait_for_function("() => window.mvpHotkeysInstalled && window.mvpCurate")
    page.evaluate("() => { window.mvpPlays = []; document.addEventListener('mvp-curate', e => "
                  "['play-started', 'played'].includes(e.detail.type) && window.mvpPlays.push(e.detail)); }")
    page.keyboard.press("2")
    page.keyboard.press("1")                     # picks: option 2, then option 1
    shown: list[str] = []
    page.keyboard.press("p")
    page.wait_for_selector("#mvp-gap .mvp-player img", timeout=5000)
    box = page.locator("#mvp-gap").bounding_box()
    assert box and 0 <= box["y"] and box["y"] + box["height"] <= 1000        # inside the viewport
    for _ in range(80):                          # sample what the player shows, until it is done
        # which frame is shown (data-full), whether still as its thumbnail or already full size
        src = page.evaluate("() => document.querySelector('#mvp-gap .mvp-player img')?.dataset.full")
        if src and (not shown or shown[-1] != src):
            shown.append(src)
        if page.evaluate("() => window.mvpPlays.some(p => p.type === 'played')"):
            break
        page.wait_for_timeout(100)
    s0, m = rec["mask"]["start"], rec["mask"]["length"]
    want = ([f"/data/{f['uri']}" for f in rec["frames"][:s0]] + [f"/data/{rec['options'][i]['uri']}" for i in (1, 0)]
            + [f"/data/{f['uri']}" for f in rec["frames"][s0 + m:]])
    assert shown == want
    assert page.locator("#mvp-gap .mvp-player").count() == 0      # the gap is back after playing
    started = page.evaluate("() => window.mvpPlays.filter(p => p.type === 'play-started').map(p => p.ms)")
    assert len(started) == 1 and started[0] < 1500
    ctx.close()


def _verdicts_seen(api: list[dict]) -> int:
    return sum(a["action"] == "verdict" for a in api)


def test_filter_the_queue_and_skips_come_back(web_app, browser, fresh_curator):
    """The per-video view lists every puzzle of the video and makes the queue hand out only those;
    skipping them all brings the first skipped one back; the filter bar narrows the queue by status
    (my skipped ones) and by distractor kind + difficulty. Every answer stays blind."""
    from db import review
    from db.models import Puzzle, Video
    from db.models.curation import Lease
    from db.review.queue_rule import reference_matches
    with web_app.Session() as s:
        vid, vpath = s.execute(select(Video.id, Video.path).where(Video.path.like("%bikes%"))).one()
        pids = sorted(s.scalars(select(Puzzle.id).where(Puzzle.video_id == vid)))
    name, password = fresh_curator
    ada = web_app.user_id(name)
    ctx, page = login(browser, web_app, name, password, path=f"/curate/?video={vid}")
    api = watch_api(page)
    page.wait_for_selector("#mvp-puzzle-list", timeout=30000)
    page.wait_for_function("() => window.mvpHotkeysInstalled && window.mvpCurate && window.mvpCurate.state()")
    rows = page.eval_on_selector_all("#mvp-puzzle-list tbody tr", "els => els.map(e => e.dataset.puzzleId)")
    assert sorted(rows) == pids                                   # the per-video view: all its puzzles
    assert all(t == vpath.rsplit("/", 1)[-1] for t in page.eval_on_selector_all(
        "#mvp-puzzle-list tbody td:nth-child(2)", "els => els.map(e => e.innerText)"))
    page.wait_for_function("name => document.querySelector('#mvp-filter-now')?.innerText.includes('video ' + name)",
                           arg=vpath.rsplit("/", 1)[-1], timeout=10000)   # the bar says what the link filtered
    assert "video=" not in page.url                               # a reload keeps the tab's state instead
    shot(page, "curate_video_view")
    with web_app.Session() as s:                                  # what the filtered queue may give ada
        state = review.read_state(s)
    others = [lease for lease in state.leases if lease.user_id != ada and lease.expires_at > utcnow()]
    avail = [p for p in pids if (p, ada) not in state.judged and state.reviews[p] + sum(
        lease.puzzle_id == p for lease in others) < state.k]
    assert avail == pids, "a fresh curator with k at its maximum is offered every puzzle of the video"
    first = current(page)
    assert first == avail[0]                                      # the queue's order: lowest id first
    # skip them all: each next one is of this video, then the first skipped one comes back
    got = [first]
    for _ in avail:
        n = _verdicts_seen(api)
        page.keyboard.press("s")
        for _ in range(150):                  # the server's answer (the next puzzle may be the same one)
            if _verdicts_seen(api) > n:
                break
            page.wait_for_timeout(100)
        page.wait_for_timeout(200)            # the answer applied
        got.append(current(page))
    assert got == avail + [avail[0]], got
    # status "skipped": my skipped puzzles (the one shown stays: it matches and is leased to me)
    page.select_option("#mvp-filter-status", "skipped")
    page.click("#mvp-filter-go")
    page.wait_for_selector(".mvp-msg:has-text('match')", timeout=15000)
    listed = page.eval_on_selector_all("#mvp-puzzle-list tbody tr", "els => els.map(e => e.dataset.puzzleId)")
    assert sorted(listed) == sorted(avail) and current(page) == avail[0]
    # any video, a distractor kind and a difficulty bound: the next puzzle matches them
    page.select_option("#mvp-filter-video", "")
    page.select_option("#mvp-filter-status", "")
    page.select_option("#mvp-filter-kind", "neighbor")
    page.fill("#mvp-filter-dmin", "0.1")
    n = len(api)
    page.click("#mvp-filter-go")
    page.wait_for_function("() => document.querySelector('#mvp-filter-now')?.innerText.includes('neighbor')",
                           timeout=15000)
    assert page.locator("#mvp-puzzle-list tbody tr").count() >= 1
    shown = current(page)
    # the filter call's own answer: the progress refresh of the earlier filter may land after n
    f = next(a for a in api[n:] if a["action"] == "filter")["body"]["state"]["filter"]
    assert f == {"kind": "neighbor", "min_difficulty": 0.1}
    if shown:
        from db.review.queue_rule import QueueFilter
        with web_app.Session() as s:
            assert reference_matches(review.read_state(s), shown, ada, QueueFilter(kind="neighbor", min_difficulty=0.1))
    # a listed puzzle opens in place, the filter and history kept
    other = next(r for r in rows if r != shown)
    page.click(f"#mvp-puzzle-list a[data-puzzle-id='{other}']")
    page.wait_for_selector(f"#mvp-puzzle[data-puzzle-id='{other}']", timeout=15000)
    assert page.evaluate("() => window.mvpCurate.state().filter.kind") == "neighbor"
    page.click("#mvp-filter-clear")
    page.wait_for_selector(".mvp-msg:has-text('filter cleared')", timeout=15000)
    assert_no_leak(web_app, api)
    ctx.close()
    with web_app.Session() as s:           # give ada's puzzles back for the other tests
        s.execute(Lease.__table__.delete().where(Lease.user_id == ada))
        s.commit()

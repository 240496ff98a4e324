"""The gallery in the browser (app/web/pages/gallery/), at 1280 px by mouse and keyboard and at 390 px
by touch: cards with the filmstrip and its gap, filters, a view saved by name and opened by its URL,
selection (one, a range, all that match), bulk tag / accept and undo as one batch, notes shown on
the curate card, frames at full size (static/lightbox.js) on the gallery and the curate card."""
from __future__ import annotations

import uuid
from pathlib import Path

import pytest
from fixtures_web import shot
from sqlalchemy import func, select

pytestmark = [pytest.mark.browser, pytest.mark.slow]
MODES = {"mouse": dict(viewport={"width": 1280, "height": 900}),
         "touch": dict(viewport={"width": 390, "height": 844}, has_touch=True, is_mobile=True, device_scale_factor=2)}
PASSWORD = "a-long-gallery-password"


def _user(web_app, role: str) -> str:
    from db.users.accounts import add_user
    name = f"g{role[:3]}{uuid.uuid4().hex[:6]}"
    with web_app.Session() as s:
        add_user(s, name, role, PASSWORD)
        s.commit()
    return name


def _open(browser, web_app, name: str, mode: str, path: str = "/gallery/"):
    ctx = browser.new_context(**MODES[mode])
    page = ctx.new_page()
    page.goto(web_app.url + path)
    page.fill("#login-user", name)
    page.fill("#login-password", PASSWORD)
    page.click("#login-submit")
    if path.startswith("/gallery"):
        page.wait_for_selector("#mvp-ggrid .mvp-gcard, #mvp-ggrid .mvp-empty", timeout=30000)
    return ctx, page


def _press(page, mode: str, locator, shift: bool = False):
    locator.scroll_into_view_if_needed()
    if mode == "touch":
        locator.tap()
    else:
        locator.click(modifiers=["Shift"] if shift else None)


def _n_puzzles(web_app) -> int:
    from db.models import Puzzle
    with web_app.Session() as s:
        return s.scalar(select(func.count()).select_from(Puzzle))


@pytest.mark.parametrize("mode", ["mouse", "touch"])
def test_gallery_cards_filters_and_saved_view(web_app, browser, mode):
    name = _user(web_app, "curator")
    ctx, page = _open(browser, web_app, name, mode)
    try:
        n = _n_puzzles(web_app)
        cards = page.locator("#mvp-ggrid .mvp-gcard")
        assert cards.count() == min(n, 48)
        first = cards.first
        assert first.locator(".mvp-gstrip img").count() >= 2 and first.locator(".mvp-ggap span").count() >= 1
        assert page.locator("#mvp-gcount").inner_text().endswith(")") and f"of {n}" in page.inner_text("#mvp-gcount")
        shot(page, f"gallery-{mode}")
        # filter by one video in the side panel (at phone width behind "Filters")
        if mode == "touch":
            assert not page.locator("#mvp-gpanel").is_visible()
            page.locator("#mvp-gtoggle").tap()
        box = page.locator("#mvp-gpanel fieldset[data-field=video] input").first
        video = box.get_attribute("value")
        _press(page, mode, box)
        _press(page, mode, page.locator("#mvp-gapply"))
        page.wait_for_function("v => new URLSearchParams(location.search).get('video') === v", arg=video)
        from db.models import Puzzle
        with web_app.Session() as s:
            of_video = s.scalar(select(func.count()).select_from(Puzzle).where(Puzzle.video_id == video))
        page.wait_for_function("k => document.querySelectorAll('#mvp-ggrid .mvp-gcard').length === k", arg=of_video)
        # save it by name, then open it by its URL in a fresh page
        if mode == "touch":
            page.locator("#mvp-gtoggle").tap()
        page.fill("#mvp-gviewname", "one video")
        _press(page, mode, page.locator("#mvp-gviewsave"))
        page.wait_for_selector("#mvp-gviewlist option[value='one video']", state="attached")
        page.goto(web_app.url + "/gallery/?view=one%20video")
        page.wait_for_function("v => new URLSearchParams(location.search).get('video') === v", arg=video)
        page.wait_for_function("k => document.querySelectorAll('#mvp-ggrid .mvp-gcard').length === k", arg=of_video)
        assert page.locator(f"#mvp-gpanel input[name=video][value='{video}']").is_checked()
        # the address itself is the view: a reload keeps it
        page.reload()
        page.wait_for_function("k => document.querySelectorAll('#mvp-ggrid .mvp-gcard').length === k", arg=of_video)
    finally:
        ctx.close()


@pytest.mark.parametrize("mode", ["mouse", "touch"])
def test_gallery_bulk_tag_and_undo(web_app, browser, mode):
    from db.models.gallery import PuzzleTag
    name = _user(web_app, "curator")
    tag = f"t{uuid.uuid4().hex[:6]}"
    ctx, page = _open(browser, web_app, name, mode)
    try:
        cards = page.locator("#mvp-ggrid .mvp-gcard")
        assert page.locator("#mvp-gbulk").is_hidden()
        if mode == "mouse":       # one, then a range with shift: cards 0..2
            _press(page, mode, cards.nth(0).locator(".mvp-gcheck"))
            _press(page, mode, cards.nth(2).locator(".mvp-gcheck"), shift=True)
        else:
            for i in range(3):
                _press(page, mode, cards.nth(i).locator(".mvp-gcheck"))
        page.wait_for_function("() => document.querySelector('#mvp-gsel-n')?.textContent === '3 selected'")
        chosen = [cards.nth(i).get_attribute("data-puzzle-id") for i in range(3)]
        page.fill("#mvp-gtag", tag)
        _press(page, mode, page.locator("#mvp-gdotag"))
        page.wait_for_selector("#mvp-gundo")
        with web_app.Session() as s:
            assert sorted(s.scalars(select(PuzzleTag.puzzle_id).where(PuzzleTag.tag == tag))) == sorted(chosen)
        assert page.locator(f"#mvp-ggrid .mvp-tag[data-tag='{tag}']").count() == 3
        shot(page, f"gallery-bulk-{mode}")
        _press(page, mode, page.locator("#mvp-gundo"))
        page.wait_for_function("t => !document.querySelector(`#mvp-ggrid .mvp-tag[data-tag='${t}']`)", arg=tag)
        with web_app.Session() as s:
            assert s.scalar(select(func.count()).select_from(PuzzleTag).where(PuzzleTag.tag == tag)) == 0
        # "all that match", by keyboard on desktop: focus a card, x selects it
        if mode == "mouse":
            cards.nth(1).focus()
            page.keyboard.press("x")
            page.wait_for_function("() => document.querySelector('#mvp-gsel-n')?.textContent === '1 selected'")
        else:
            _press(page, mode, cards.nth(1).locator(".mvp-gcheck"))
        _press(page, mode, page.locator("#mvp-gall"))
        total = _n_puzzles(web_app)
        page.wait_for_function("t => document.querySelector('#mvp-gsel-n')?.textContent === `all ${t} that match`", arg=total)
        page.fill("#mvp-gtag", tag)
        _press(page, mode, page.locator("#mvp-gdotag"))
        page.wait_for_selector("#mvp-gundo")
        with web_app.Session() as s:
            assert s.scalar(select(func.count()).select_from(PuzzleTag).where(PuzzleTag.tag == tag)) == total
        _press(page, mode, page.locator("#mvp-gundo"))
        page.wait_for_function("t => !document.querySelector(`#mvp-ggrid .mvp-tag[data-tag='${t}']`)", arg=tag)
    finally:
        ctx.close()


def test_gallery_bulk_accept_undo_and_refusals(web_app, browser):
    """An admin accepts in bulk (ordinary verdicts: the status and counts change) and undoes the batch;
    a researcher sees no bulk bar and the store refuses their bulk action with one line."""
    from db.models.curation import PuzzleVerdict
    from db.users.accounts import get_user
    admin = _user(web_app, "admin")
    ctx, page = _open(browser, web_app, admin, "mouse")
    try:
        cards = page.locator("#mvp-ggrid .mvp-gcard")
        _press(page, "mouse", cards.nth(0).locator(".mvp-gcheck"))
        _press(page, "mouse", cards.nth(1).locator(".mvp-gcheck"))
        chosen = [cards.nth(i).get_attribute("data-puzzle-id") for i in range(2)]
        page.fill("#mvp-greason", "")
        page.click("#mvp-greject")
        page.wait_for_selector("#mvp-gmsg .mvp-msg-warn")
        page.click("#mvp-gaccept")
        page.wait_for_selector("#mvp-gundo")
        with web_app.Session() as s:
            uid = get_user(s, admin).id
            assert sorted(s.scalars(select(PuzzleVerdict.puzzle_id).where(PuzzleVerdict.user_id == uid))) == sorted(chosen)
        for pid in chosen:
            assert "✓" in page.inner_text(f"#mvp-ggrid .mvp-gcard[data-puzzle-id='{pid}'] .mvp-gmeta")
        page.click("#mvp-gundo")
        page.wait_for_selector("#mvp-gmsg >> text=undone: bulk accept (2 changes)")
        with web_app.Session() as s:
            assert s.scalar(select(func.count()).select_from(PuzzleVerdict).where(PuzzleVerdict.user_id == uid)) == 0
    finally:
        ctx.close()
    rhea = _user(web_app, "researcher")
    ctx, page = _open(browser, web_app, rhea, "mouse")
    try:
        page.locator("#mvp-ggrid .mvp-gcard .mvp-gcheck").first.click()
        assert page.locator("#mvp-gbulk").is_hidden()
        pid = page.locator("#mvp-ggrid .mvp-gcard").first.get_attribute("data-puzzle-id")
        res = page.evaluate("""pid => fetch('/gallery/api/bulk', {method: 'POST', headers: {'Content-Type': 'application/json'},
            body: JSON.stringify({action: 'accept', ids: [pid]})}).then(async r => [r.status, await r.json()])""", pid)
        assert res[0] == 400 and res[1]["error"].startswith("only curators and admins may accept or reject")
    finally:
        ctx.close()


@pytest.mark.parametrize("mode", ["mouse", "touch"])
def test_frames_at_full_size(web_app, browser, fresh_curator, mode):
    name = _user(web_app, "curator")
    ctx, page = _open(browser, web_app, name, mode)
    try:
        strip = page.locator("#mvp-ggrid .mvp-gcard").first.locator(".mvp-gstrip figure")
        n = strip.count()
        _press(page, mode, strip.first)
        page.wait_for_selector("#mvp-lightbox:not([hidden]) .mvp-lb-main img")
        assert page.inner_text("#mvp-lightbox .mvp-lb-count") == f"1 / {n}"
        src = page.get_attribute("#mvp-lightbox .mvp-lb-main img", "src")
        assert src.startswith("/data/")                 # the full-size frame, not the thumbnail
        if mode == "mouse":
            page.keyboard.press("ArrowRight")
        else:
            box = page.locator("#mvp-lightbox").bounding_box()
            y = box["y"] + box["height"] / 2
            page.evaluate("""y => { const b = document.getElementById('mvp-lightbox');
                const t = (x) => [new Touch({identifier: 1, target: b, clientX: x, clientY: y})];
                b.dispatchEvent(new TouchEvent('touchstart', {changedTouches: t(300), bubbles: true}));
                b.dispatchEvent(new TouchEvent('touchend', {changedTouches: t(100), bubbles: true})); }""", y)
        page.wait_for_function("n => document.querySelector('#mvp-lightbox .mvp-lb-count')?.textContent === `2 / ${n}`", arg=n)
        shot(page, f"lightbox-{mode}")
        if mode == "mouse":
            page.keyboard.press("Escape")
        else:
            page.locator("#mvp-lightbox .mvp-lb-close").tap()
        page.wait_for_selector("#mvp-lightbox", state="hidden")
    finally:
        ctx.close()
    # the curate card: an option's zoom button opens it between the frames around the gap; compare two
    cur, pw = fresh_curator
    ctx = browser.new_context(**MODES[mode])
    page = ctx.new_page()
    try:
        page.goto(web_app.url + "/curate/")
        page.fill("#login-user", cur)
        page.fill("#login-password", pw)
        page.click("#login-submit")
        page.wait_for_selector("#mvp-puzzle[data-phase=answer]", timeout=30000)
        _press(page, mode, page.locator("#mvp-puzzle .mvp-opt .mvp-zoom").nth(1))
        page.wait_for_selector("#mvp-lightbox:not([hidden]) .mvp-lb-main img")
        assert page.locator("#mvp-lightbox .mvp-lb-row .mvp-lb-ctx").count() == 2
        assert page.locator("#mvp-puzzle .mvp-gap-slot.picked").count() == 0     # the zoom picked nothing
        if mode == "mouse":
            page.keyboard.press("c")
        else:
            page.locator("#mvp-lightbox .mvp-lb-compare").tap()
        page.wait_for_function("() => document.querySelectorAll('#mvp-lightbox .mvp-lb-row').length === 2")
        assert page.locator("#mvp-lightbox .mvp-lb-ctx").count() == 4
        shot(page, f"lightbox-compare-{mode}")
    finally:
        ctx.close()


def test_tags_and_comments_on_the_curate_card(web_app, browser, fresh_curator):
    """Notes written in the gallery show on the curate card; a distractor's only once answered."""
    name = _user(web_app, "curator")
    cur, pw = fresh_curator
    ctx, page = _open(browser, web_app, name, "mouse")
    try:
        card = page.locator("#mvp-ggrid .mvp-gcard").first
        pid = card.get_attribute("data-puzzle-id")
        card.locator(".mvp-gnotes").click()
        page.fill("#mvp-gnote-tag", "Check-Me")
        page.click("#mvp-gnote-addtag")
        page.wait_for_selector("#mvp-gdetail-notes .mvp-tag[data-tag='check-me']")
        page.fill("#mvp-gnote-text", "the gap hides a cut")
        page.click("#mvp-gnote-comment")
        page.wait_for_selector("#mvp-gdetail-notes >> text=the gap hides a cut")
        page.wait_for_selector(f"#mvp-ggrid .mvp-gcard[data-puzzle-id='{pid}'] .mvp-tag[data-tag='check-me']")
        # searchable: the comment's words find the puzzle
        page.fill("#mvp-gq", "hides a cut")
        page.click("#mvp-gapply")
        page.wait_for_function("p => { const c = document.querySelectorAll('#mvp-ggrid .mvp-gcard'); "
                               "return c.length === 1 && c[0].dataset.puzzleId === p; }", arg=pid)
    finally:
        ctx.close()
    ctx = browser.new_context(**MODES["mouse"])
    page = ctx.new_page()
    try:
        page.goto(web_app.url + f"/curate/?puzzle={pid}")
        page.fill("#login-user", cur)
        page.fill("#login-password", pw)
        page.click("#login-submit")
        page.wait_for_selector(f"#mvp-puzzle[data-puzzle-id='{pid}'] .mvp-notes .mvp-tag[data-tag='check-me']", timeout=30000)
        assert "the gap hides a cut" in page.inner_text("#mvp-puzzle .mvp-notes")
    finally:
        ctx.close()


@pytest.mark.parametrize("mode", ["mouse", "touch"])
def test_admin_overview(web_app, browser, mode):
    """Per curator (verdicts, per hour, queue left) and per video, refreshed from the page."""
    from db import review
    from db.users.accounts import get_user
    admin, cur = _user(web_app, "admin"), _user(web_app, "curator")
    ctx, page = _open(browser, web_app, admin, mode, path="/admin/")
    try:
        row = page.locator(f"#mvp-overview-curators tr[data-curator='{cur}'] td")
        row.first.wait_for(timeout=30000)
        assert row.nth(1).inner_text() == "0"
        with web_app.Session() as s:
            uid = get_user(s, cur).id
            old_k = review.overlap_k(s)
            review.set_overlap(s, 50)          # a puzzle open to this curator whatever other tests judged
            s.commit()
            pid = review.next_puzzle(s, uid)
            review.submit_verdict(s, uid, pid, "reject", reason="blurry", seconds=36.0)
            review.set_overlap(s, old_k)
            s.commit()
        _press(page, mode, page.locator("#admin-overview-refresh"))
        page.wait_for_function("c => { const r = document.querySelector(`#mvp-overview-curators tr[data-curator='${c}']`); "
                               "return r && r.children[1].textContent === '1'; }", arg=cur)
        assert row.nth(3).inner_text() == "100"                       # 1 verdict in 36 s
        assert page.locator("#mvp-overview-videos tr[data-video]").count() == 2
        shot(page, f"overview-{mode}")
    finally:
        ctx.close()
        with web_app.Session() as s:         # leave the shared app's puzzles as they were
            review.undo_last(s, get_user(s, cur).id)

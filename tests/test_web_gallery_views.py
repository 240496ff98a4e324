"""The gallery's further pieces in the browser, at 1280 px by mouse and keyboard and at 390 px by touch:
the shortcut audit per puzzle on the cards and as a filter (run from the Data page, whose gallery a
researcher reads without a bulk bar), the gallery inside the Curate page (a view switch; bulk there; a
card opens the one-puzzle view), tags and comments written on the curate card, and the grid's infinite
scroll (the next page when the last card nears the viewport, "n of total" and "all that match" kept)."""
from __future__ import annotations

import re
import uuid

import pytest
from fixtures_web import shot
from sqlalchemy import delete, func, select

pytestmark = [pytest.mark.browser, pytest.mark.slow]
MODES = {"mouse": dict(viewport={"width": 1280, "height": 900}),
         "touch": dict(viewport={"width": 390, "height": 844}, has_touch=True, is_mobile=True, device_scale_factor=2)}
PASSWORD = "a-long-gallery-password"


def _user(web_app, role: str) -> str:
    from db.users.accounts import add_user
    name = f"v{role[:3]}{uuid.uuid4().hex[:6]}"
    with web_app.Session() as s:
        add_user(s, name, role, PASSWORD)
        s.commit()
    return name


def _open(browser, web_app, name: str, mode: str, path: str, init_script: str | None = None):
    ctx = browser.new_context(**MODES[mode])
    if init_script:
        ctx.add_init_script(init_script)
    page = ctx.new_page()
    page.goto(web_app.url + path)
    page.fill("#login-user", name)
    page.fill("#login-password", PASSWORD)
    page.click("#login-submit")
    page.wait_for_selector("#mvp-nav-bar, .mvp-nav", timeout=30000)
    return ctx, page


def _press(mode: str, locator, shift: bool = False):
    locator.scroll_into_view_if_needed()
    if mode == "touch":
        locator.tap()
    else:
        locator.click(modifiers=["Shift"] if shift else None)


def _snap(page, name: str) -> None:
    shot(page, name)          # test-artifacts/ (git-ignored): the screenshots to look at


def _n_puzzles(web_app) -> int:
    from db.models import Puzzle
    with web_app.Session() as s:
        return s.scalar(select(func.count()).select_from(Puzzle))


def _cards(page) -> int:
    return page.locator("#mvp-ggrid .mvp-gcard").count()


@pytest.mark.parametrize("mode", ["mouse", "touch"])
def test_audit_per_puzzle_from_the_data_page(web_app, browser, mode):
    """A researcher runs the audit on the Data page: each puzzle's solvers are stored, the Data page's
    gallery (read-only: no bulk bar) shows them on the cards, and its audit filter finds them."""
    from db.models.audit import PuzzleAudit
    from db.puzzles.audit_results import solvers_of
    with web_app.Session() as s:                 # whatever an earlier test ran: nothing audited
        s.execute(delete(PuzzleAudit))
        s.commit()
    n = _n_puzzles(web_app)
    ctx, page = _open(browser, web_app, _user(web_app, "researcher"), mode, "/datasets/")
    try:
        page.wait_for_function("k => document.querySelectorAll('#mvp-ggrid .mvp-gcard').length === k", arg=n, timeout=30000)
        assert page.locator("#mvp-ggrid .mvp-gaudit.unaudited").count() == n
        _press(mode, page.locator("#mvp-ggrid .mvp-gcheck").first)
        assert page.locator("#mvp-gbulk").is_hidden()          # a researcher reads: no bulk bar
        _press(mode, page.locator("#data-audit"))
        page.wait_for_selector("#data-audit-table", timeout=120000)
        page.wait_for_function("() => !document.querySelector('#mvp-ggrid .mvp-gaudit.unaudited')", timeout=30000)
        with web_app.Session() as s:
            ids = list(s.scalars(select(PuzzleAudit.puzzle_id).distinct()))
            solved = solvers_of(s, ids)
        assert len(ids) == n
        for pid, names in solved.items():
            text = page.inner_text(f"#mvp-ggrid .mvp-gcard[data-puzzle-id='{pid}'] .mvp-gaudit")
            assert text == (f"solved by {', '.join(names)}" if names else "no shortcut")
        _snap(page, f"data-gallery-audit-{mode}")
        # the filter: puzzles some shortcut solver solves, then those none solves
        for flag, want in (("any", {p for p, v in solved.items() if v}), ("none", {p for p, v in solved.items() if not v})):
            if mode == "touch":
                _press(mode, page.locator("#mvp-gtoggle"))
            page.select_option("#mvp-gaudit", flag)
            _press(mode, page.locator("#mvp-gapply"))
            page.wait_for_function("f => location.hash.includes('audit=' + f)", arg=flag)
            page.wait_for_function("k => document.querySelectorAll('#mvp-ggrid .mvp-gcard').length === k "
                                   "|| (k === 0 && document.querySelector('#mvp-ggrid .mvp-empty'))", arg=len(want))
            got = set(page.eval_on_selector_all("#mvp-ggrid .mvp-gcard", "cs => cs.map(c => c.dataset.puzzleId)"))
            assert got == want
    finally:
        ctx.close()


@pytest.mark.parametrize("mode", ["mouse", "touch"])
def test_gallery_view_on_the_curate_page(web_app, browser, mode):
    """A curator switches the Curate page to the grid (button, or g), tags two puzzles in bulk there,
    undoes it, and opens a card's puzzle in the one-puzzle view; #gallery keeps the grid on a reload."""
    from db.models.gallery import PuzzleTag
    tag = f"c{uuid.uuid4().hex[:6]}"
    ctx, page = _open(browser, web_app, _user(web_app, "curator"), mode, "/curate/")
    try:
        page.wait_for_selector("#mvp-puzzle", timeout=30000)
        assert page.locator("#mvp-ggrid").count() == 0 or page.locator("#mvp-ggrid").is_hidden()
        if mode == "mouse":
            page.keyboard.press("g")
        else:
            _press(mode, page.locator("#mvp-view-grid"))
        page.wait_for_selector("#mvp-ggrid .mvp-gcard", timeout=30000)
        assert page.locator("#mvp-stage").is_hidden() and "#gallery" in page.url
        assert page.get_attribute("#mvp-view-grid", "aria-pressed") == "true"
        cards = page.locator("#mvp-ggrid .mvp-gcard")
        _press(mode, cards.nth(0).locator(".mvp-gcheck"))
        _press(mode, cards.nth(1).locator(".mvp-gcheck"))
        page.wait_for_function("() => document.querySelector('#mvp-gsel-n')?.textContent === '2 selected'")
        chosen = [cards.nth(i).get_attribute("data-puzzle-id") for i in range(2)]
        page.fill("#mvp-gtag", tag)
        _press(mode, page.locator("#mvp-gdotag"))
        page.wait_for_selector("#mvp-gundo")
        with web_app.Session() as s:
            assert sorted(s.scalars(select(PuzzleTag.puzzle_id).where(PuzzleTag.tag == tag))) == sorted(chosen)
        _snap(page, f"curate-gallery-{mode}")
        _press(mode, page.locator("#mvp-gundo"))
        page.wait_for_function("t => !document.querySelector(`#mvp-ggrid .mvp-tag[data-tag='${t}']`)", arg=tag)
        with web_app.Session() as s:
            assert s.scalar(select(func.count()).select_from(PuzzleTag).where(PuzzleTag.tag == tag)) == 0
        # the address keeps the grid
        page.reload()
        page.wait_for_selector("#mvp-ggrid .mvp-gcard", timeout=30000)
        assert page.locator("#mvp-stage").is_hidden()
        # a card's id opens that puzzle in the one-puzzle view
        pid = page.locator("#mvp-ggrid .mvp-gcard").nth(2).get_attribute("data-puzzle-id")
        _press(mode, page.locator(f"#mvp-ggrid .mvp-gcard[data-puzzle-id='{pid}'] .mvp-gid"))
        page.wait_for_selector(f"#mvp-puzzle[data-puzzle-id='{pid}']", timeout=30000)
        assert page.locator("#mvp-ggrid").is_hidden() and "#gallery" not in page.url
        assert page.get_attribute("#mvp-view-one", "aria-pressed") == "true"
    finally:
        ctx.close()


@pytest.mark.parametrize("mode", ["mouse", "touch"])
def test_tags_and_comments_written_on_the_curate_card(web_app, browser, fresh_curator, mode):
    """The one-puzzle view shows the puzzle's tags and comments and lets a curator add and remove a
    tag and add a comment (by Enter or a tap); a researcher gets no box and the API refuses them."""
    from db.models.gallery import PuzzleComment, PuzzleTag
    from db.users.accounts import get_user
    cur, pw = fresh_curator
    tag, words = f"k{uuid.uuid4().hex[:6]}", f"look again {uuid.uuid4().hex[:4]}"
    ctx = browser.new_context(**MODES[mode])
    page = ctx.new_page()
    try:
        page.goto(web_app.url + "/curate/")
        page.fill("#login-user", cur)
        page.fill("#login-password", pw)
        page.click("#login-submit")
        page.wait_for_selector("#mvp-puzzle[data-phase=answer] #mvp-noteedit", timeout=30000)
        pid = page.get_attribute("#mvp-puzzle", "data-puzzle-id")
        page.fill("#mvp-cnote-tag", tag.upper())
        if mode == "mouse":
            page.press("#mvp-cnote-tag", "Enter")
        else:
            _press(mode, page.locator("#mvp-cnote-addtag"))
        page.wait_for_selector(f"#mvp-puzzle .mvp-notes .mvp-tag[data-tag='{tag}']")
        page.fill("#mvp-cnote-text", words)
        if mode == "mouse":
            page.press("#mvp-cnote-text", "Enter")
        else:
            _press(mode, page.locator("#mvp-cnote-comment"))
        page.wait_for_selector(f"#mvp-puzzle .mvp-notes >> text={words}")
        assert page.get_attribute("#mvp-puzzle", "data-phase") == "answer"      # still blind, same puzzle
        assert page.get_attribute("#mvp-puzzle", "data-puzzle-id") == pid
        with web_app.Session() as s:
            uid = get_user(s, cur).id
            assert s.scalar(select(PuzzleTag.user_id).where(PuzzleTag.puzzle_id == pid, PuzzleTag.tag == tag)) == uid
            assert s.scalar(select(PuzzleComment.text).where(PuzzleComment.puzzle_id == pid, PuzzleComment.user_id == uid)) == words
        _snap(page, f"curate-notes-{mode}")
        _press(mode, page.locator(f"#mvp-puzzle .mvp-tag[data-tag='{tag}'] .mvp-untag"))
        page.wait_for_selector(f"#mvp-puzzle .mvp-tag[data-tag='{tag}']", state="detached")
        with web_app.Session() as s:
            assert s.scalar(select(func.count()).select_from(PuzzleTag).where(PuzzleTag.tag == tag)) == 0
    finally:
        ctx.close()
    ctx, page = _open(browser, web_app, _user(web_app, "researcher"), mode, f"/curate/?puzzle={pid}")
    try:
        page.wait_for_selector(f"#mvp-puzzle[data-puzzle-id='{pid}']", timeout=30000)
        assert page.locator("#mvp-noteedit").count() == 0 and page.locator(".mvp-untag").count() == 0
        assert words in page.inner_text("#mvp-puzzle .mvp-notes")
        res = page.evaluate("""() => fetch('/curate/api/tag', {method: 'POST', headers: {'Content-Type': 'application/json'},
            body: JSON.stringify({tag: 'nope', state: {pid: document.querySelector('#mvp-puzzle').dataset.puzzleId}})})
            .then(async r => [r.status, await r.json()])""")
        assert res[0] == 400 and res[1]["error"].startswith("only curators and admins may tag or comment")
    finally:
        ctx.close()


# each card as tall as a screen and one per row: the last card of a page starts below the viewport,
# as it does on a real set's pages of 48 cards (the test data has few puzzles)
TALL_CARDS = """document.addEventListener('DOMContentLoaded', () => { const s = document.createElement('style');
  s.textContent = '.mvp-ggrid { grid-template-columns: minmax(0, 1fr) !important; } .mvp-gcard { min-height: 1600px; }';
  document.head.append(s); });"""


@pytest.mark.parametrize("mode", ["mouse", "touch"])
def test_infinite_scroll_keeps_count_and_selection(web_app, browser, mode):
    """Two cards a request (the test data has four puzzles): scrolling the last card near the viewport loads the next page (wheel, or
    scrolled by touch), "n of total" grows, a range reaches across pages, and "all that match" still
    acts on every puzzle."""
    from db.models.gallery import PuzzleTag
    n = _n_puzzles(web_app)
    assert n >= 3
    ctx, page = _open(browser, web_app, _user(web_app, "curator"), mode, "/gallery/?limit=2", TALL_CARDS)
    try:
        page.wait_for_selector("#mvp-ggrid .mvp-gcard", timeout=30000)
        page.wait_for_load_state("networkidle")       # nothing more loads while the last card is far off
        assert _cards(page) == 2 and re.match(rf"1–2 of {n}\b", page.inner_text("#mvp-gcount"))
        loaded = 2
        while loaded < n:
            last = page.locator("#mvp-ggrid .mvp-gcard").nth(loaded - 1)
            if mode == "mouse":
                while last.bounding_box()["y"] > 900 + 500:
                    page.mouse.move(640, 450)
                    page.mouse.wheel(0, 800)
            else:
                last.scroll_into_view_if_needed()
            want = min(n, loaded + 2)
            page.wait_for_function("k => document.querySelectorAll('#mvp-ggrid .mvp-gcard').length === k", arg=want)
            loaded = want
            assert re.match(rf"1–{loaded} of {n}\b", page.inner_text("#mvp-gcount"))
        assert page.locator("#mvp-gnext").is_hidden()
        idx = [int(x) for x in page.eval_on_selector_all("#mvp-ggrid .mvp-gcard", "cs => cs.map(c => c.dataset.index)")]
        assert idx == list(range(n))                   # each card once, in order
        # a range across pages (shift-click) by mouse, one at a time by touch
        cards = page.locator("#mvp-ggrid .mvp-gcard")
        if mode == "mouse":
            _press(mode, cards.nth(0).locator(".mvp-gcheck"))
            _press(mode, cards.nth(2).locator(".mvp-gcheck"), shift=True)
            page.wait_for_function("() => document.querySelector('#mvp-gsel-n')?.textContent === '3 selected'")
        else:
            for i in (0, 2):
                _press(mode, cards.nth(i).locator(".mvp-gcheck"))
            page.wait_for_function("() => document.querySelector('#mvp-gsel-n')?.textContent === '2 selected'")
        _press(mode, page.locator("#mvp-gall"))
        page.wait_for_function("t => document.querySelector('#mvp-gsel-n')?.textContent === `all ${t} that match`", arg=n)
        tag = f"s{uuid.uuid4().hex[:6]}"
        page.fill("#mvp-gtag", tag)
        _press(mode, page.locator("#mvp-gdotag"))
        page.wait_for_selector("#mvp-gundo")
        with web_app.Session() as s:
            assert s.scalar(select(func.count()).select_from(PuzzleTag).where(PuzzleTag.tag == tag)) == n
        # the reload after the action keeps every card loaded so far, not only the first page
        page.wait_for_function("k => document.querySelectorAll('#mvp-ggrid .mvp-gcard').length === k", arg=n)
        _press(mode, page.locator("#mvp-gundo"))
        page.wait_for_function("t => !document.querySelector(`#mvp-ggrid .mvp-tag[data-tag='${t}']`)", arg=tag)
        with web_app.Session() as s:
            assert s.scalar(select(func.count()).select_from(PuzzleTag).where(PuzzleTag.tag == tag)) == 0
    finally:
        ctx.close()


@pytest.mark.parametrize("mode", ["mouse", "touch"])
def test_gallery_screenshots_with_the_new_pieces(web_app, browser, mode):
    """The standalone gallery with the audit flags on its cards and the audit filter in its panel."""
    ctx, page = _open(browser, web_app, _user(web_app, "curator"), mode, "/gallery/")
    try:
        page.wait_for_selector("#mvp-ggrid .mvp-gcard .mvp-gaudit", timeout=30000)
        assert page.locator("#mvp-gpanel #mvp-gaudit option[value=any]").count() == 1
        if mode == "touch":
            _press(mode, page.locator("#mvp-gtoggle"))
        _snap(page, f"gallery-new-{mode}")
    finally:
        ctx.close()

"""The curate journey without a keyboard: solve by tapping/clicking option cards,
keep or reject each distractor with its own buttons and reason, judge the puzzle with the buttons;
by mouse at desktop width and by touch emulation at 390 px. A card's image opens nothing."""
from __future__ import annotations

from pathlib import Path

import pytest
from curate_steps import current, record, wait_new

pytestmark = [pytest.mark.browser, pytest.mark.slow]
SHOTS = Path("/tmp/shots")
MODES = {"mouse": dict(viewport={"width": 1400, "height": 1000}),
         "touch": dict(viewport={"width": 390, "height": 844}, has_touch=True, is_mobile=True, device_scale_factor=2)}


def _open(browser, web_app, name, password, mode):
    ctx = browser.new_context(**MODES[mode])
    page = ctx.new_page()
    page.goto(web_app.url + "/curate/")
    page.fill("#login-user", name)
    page.fill("#login-password", password)
    page.click("#login-submit")
    page.wait_for_selector("#mvp-puzzle[data-phase=answer]", timeout=30000)
    page.wait_for_function("() => window.mvpCurate")
    return ctx, page


def _press(page, mode, selector):
    loc = page.locator(selector).first
    loc.scroll_into_view_if_needed()
    if mode == "touch":
        loc.tap()
    else:
        loc.click()


def _verdict_of(web_app, uid, pid, label):
    from db.models.curation import OptionVerdict
    with web_app.Session() as s:
        row = s.query(OptionVerdict).filter_by(user_id=uid, puzzle_id=pid, label=label).one_or_none()
        return None if row is None else (row.verdict, row.reason_code)


@pytest.mark.parametrize("mode", ["mouse", "touch"])
def test_curate_by_mouse_and_touch(web_app, browser, fresh_curator, mode):
    name, password = fresh_curator
    uid = web_app.user_id(name)
    ctx, page = _open(browser, web_app, name, password, mode)
    pid = current(page)
    rec = record(web_app, pid)
    idx = {o["label"]: i + 1 for i, o in enumerate(rec["options"])}
    for lab in rec["answer"]:                                   # solve: the targets, in order
        _press(page, mode, f"#mvp-puzzle .mvp-opt[data-index='{idx[lab]}']")
    page.wait_for_function("m => document.querySelectorAll('.mvp-gap-slot.picked').length === m",
                           arg=len(rec["answer"]))
    _press(page, mode, "#btn-answer")
    page.wait_for_selector("#mvp-puzzle[data-phase=vet]", timeout=15000)

    # no card image is a link (nothing opens the JPEG in a new tab), and pressing one opens nothing
    assert page.eval_on_selector_all("#mvp-puzzle .mvp-opt img", "els => els.every(e => !e.closest('a'))")
    _press(page, mode, "#mvp-puzzle .mvp-opt img")
    page.wait_for_timeout(300)
    assert len(ctx.pages) == 1 and current(page) == pid

    d = next(o["label"] for o in rec["options"] if o["kind"] != "target")
    card = f"#mvp-puzzle .mvp-opt[data-label='{d}']"
    assert page.locator(f"#mvp-puzzle .mvp-opt.target .mvp-card-ctl").count() == 0   # targets are not vetted
    page.select_option(f"{card} .mvp-card-reason", "too_easy")
    _press(page, mode, f"{card} .mvp-card-reject")
    page.wait_for_selector(f"{card}[data-state='reject']")
    assert _verdict_of(web_app, uid, pid, d) == ("reject", "too_easy")
    keys_shown = page.locator("#mvp-puzzle h4 .mvp-keys").is_visible()
    assert keys_shown == (mode == "mouse")                      # key names only where there is a keyboard
    SHOTS.mkdir(exist_ok=True)
    # not full_page: a full-page capture re-emulates the screen and drops the touch emulation
    page.screenshot(path=str(SHOTS / f"curate_card_controls_{mode}.png"))
    # a new reason on a rejected card re-rejects it with that reason; Keep keeps it
    page.select_option(f"{card} .mvp-card-reason", "near_duplicate")
    page.wait_for_function("s => document.querySelector(s + ' .mvp-card-reason').value === 'near_duplicate'"
                           " && document.querySelector(s + ' .mvp-rej').textContent.includes('near_duplicate')", arg=card)
    assert _verdict_of(web_app, uid, pid, d) == ("reject", "near_duplicate")
    _press(page, mode, f"{card} .mvp-card-keep")
    page.wait_for_selector(f"{card}[data-state='keep']")
    assert _verdict_of(web_app, uid, pid, d)[0] == "keep"
    # Keep on a kept card stays kept (the buttons set, they do not flip)
    _press(page, mode, f"{card} .mvp-card-keep")
    page.wait_for_selector(f"{card}[data-state='keep'] .mvp-card-keep[aria-pressed='true']")
    assert _verdict_of(web_app, uid, pid, d)[0] == "keep"

    _press(page, mode, "#btn-accept")
    assert wait_new(page, pid) != pid
    # the next puzzle is painted before the verdict's request is answered (the page does not wait for
    # it), so the stored verdict is awaited, not read at once
    assert _puzzle_verdict(web_app, uid, pid) == "accept"
    ctx.close()


def _puzzle_verdict(web_app, uid, pid, wait_s: float = 15.0):
    """The stored verdict on `pid` by `uid`, polled until it lands or `wait_s` passes (then None)."""
    import time

    from db.models.curation import PuzzleVerdict
    deadline = time.monotonic() + wait_s
    while True:
        with web_app.Session() as s:
            row = s.query(PuzzleVerdict).filter_by(user_id=uid, puzzle_id=pid).one_or_none()
        if row is not None or time.monotonic() > deadline:
            return None if row is None else row.verdict
        time.sleep(0.1)


def test_curate_at_phone_width(web_app, browser, fresh_curator):
    """390 px with touch: the rubric folded, the filmstrip with its gap on one line, the options in a
    grid of several per row, no key names shown; at desktop with a mouse the key hints are there."""
    name, password = fresh_curator
    ctx, page = _open(browser, web_app, name, password, "touch")
    page.wait_for_function("() => document.querySelector('#mvp-rubric') && !document.querySelector('#mvp-rubric')?.open")
    tops = page.eval_on_selector_all(".mvp-filmstrip > *", "els => els.map(e => Math.round(e.getBoundingClientRect().top))")
    assert len(tops) >= 3 and len(set(tops)) == 1, tops                    # the gap and its context on one line
    right = page.eval_on_selector(".mvp-filmstrip", "e => e.scrollWidth <= e.clientWidth + 1")
    assert right, "the filmstrip overflows the phone width"
    rows = page.eval_on_selector_all("#mvp-puzzle .mvp-opt", "els => els.map(e => Math.round(e.getBoundingClientRect().top))")
    assert len(rows) >= 3 and len(set(rows)) < len(rows), rows            # several options per row
    assert page.locator("#mvp-puzzle .mvp-solve .mvp-keys").is_hidden()
    assert page.locator("#mvp-puzzle .mvp-solve .mvp-touch").is_visible()
    assert "tap the" in page.inner_text("#mvp-puzzle .mvp-solve")
    assert page.evaluate("document.documentElement.scrollWidth") <= 390
    SHOTS.mkdir(exist_ok=True)
    page.screenshot(path=str(SHOTS / "curate_390_touch.png"), full_page=False)
    ctx.close()
    ctx, page = _open(browser, web_app, name, password, "mouse")
    assert page.locator("#mvp-puzzle .mvp-solve .mvp-keys").is_visible()
    assert page.locator("#mvp-puzzle .mvp-solve .mvp-touch").is_hidden()
    assert page.eval_on_selector("#mvp-rubric", "e => e.open")
    ctx.close()


def _after(page, sel: str) -> str:
    """The text CSS adds after an element (its ::after content), '' when none."""
    c = page.eval_on_selector(sel, "e => getComputedStyle(e, '::after').content")
    return "" if c in ("none", "normal") else c.strip('"')


def test_phone_layout_names_no_keys_and_fits(web_app, browser, fresh_curator):
    """390 px with touch: the buttons name no keys and sit in a compact grid (no "Keys" button), the
    gap's frames are wide enough to see with one-line captions, and each card's reason list is shown
    whole; at 1280 px with a mouse the buttons name their keys."""
    from curate_steps import keys_for
    name, password = fresh_curator
    ctx, page = _open(browser, web_app, name, password, "touch")
    try:
        labels = {b: page.inner_text(f"#btn-{b}") + _after(page, f"#btn-{b}")
                  for b in ("answer", "accept", "reject", "skip", "undo", "play")}
        assert not any("(" in v for v in labels.values()), labels
        assert page.locator("#btn-help").is_hidden()
        box = page.eval_on_selector("#mvp-actions", "e => e.getBoundingClientRect().height")
        assert box <= 160, box                                     # three rows of compact buttons, not nine
        assert "cycles" not in page.inner_text("#mvp-reason")
        rec = record(web_app, current(page))
        for d in keys_for(rec, True):
            page.keyboard.press(d)
        page.keyboard.press("Enter")
        page.wait_for_selector("#mvp-puzzle[data-phase=vet] .mvp-gap-slot.filled")
        slots = page.eval_on_selector_all(".mvp-gap-slot.filled", "els => els.map(e => e.getBoundingClientRect().width)")
        assert min(slots) >= 40, slots
        caps = page.eval_on_selector_all(".mvp-gap-slot.filled figcaption", """els => els.map(e => {
            const r = document.createRange(); r.selectNodeContents(e);
            return new Set([...r.getClientRects()].map(x => Math.round(x.top))).size; })""")
        assert caps and max(caps) == 1, caps                          # one line each
        # each reason list as wide as its longest reason needs (none cut, e.g. "broken fram")
        fits = page.eval_on_selector_all(".mvp-card-reason", """els => els.map(e => {
            const c = e.cloneNode(true); c.style.cssText = 'position:absolute;max-width:none;width:auto;flex:none';
            e.after(c); const need = c.getBoundingClientRect().width; c.remove();
            return [Math.round(e.getBoundingClientRect().width), Math.round(need)]; })""")
        assert fits and all(have >= need - 1 for have, need in fits), fits
        assert page.evaluate("document.documentElement.scrollWidth") <= 390
        page.screenshot(path=str(SHOTS / "curate_390_vet.png"), full_page=True) if SHOTS.mkdir(exist_ok=True) is None else None
    finally:
        ctx.close()
    ctx = browser.new_context(viewport={"width": 1280, "height": 900})
    page = ctx.new_page()
    try:
        page.goto(web_app.url + "/curate/")
        page.fill("#login-user", name)
        page.fill("#login-password", password)
        page.click("#login-submit")
        page.wait_for_selector("#btn-accept")
        assert page.inner_text("#btn-accept").strip() + _after(page, "#btn-accept") == "Accept (a)"
        assert _after(page, "#btn-answer") == " (Enter)" and page.locator("#btn-help").is_visible()
    finally:
        ctx.close()

"""The curate page's video filter is searchable (a hundred names are not a list to scroll): a search
box whose suggestions (a datalist) are the videos' file names; typing a name picks
that video in the filter, Filter narrows the queue to it, Clear empties the box. In Chromium, at
desktop and phone width, on the studio of fixtures_web_named_runs (the web test data's videos)."""
from __future__ import annotations

import pytest
from fixtures_web import login, shot
from sqlalchemy import select

pytestmark = [pytest.mark.browser]


@pytest.mark.parametrize("width", [1280, 390])
def test_video_filter_is_searchable(named_studio, browser, width):
    from db.models import Video
    with named_studio.Session() as s:
        videos = {p.rsplit("/", 1)[-1]: vid for vid, p in s.execute(select(Video.id, Video.path))}
    name = next(n for n in videos if n.startswith("bikes"))
    ctx, page = login(browser, named_studio.url, "cora", path="/curate/")
    try:
        page.set_viewport_size({"width": width, "height": 900})
        page.wait_for_selector("#mvp-filter-video-find", timeout=60000)
        box = page.eval_on_selector("#mvp-filter-video-find", "e => e.getBoundingClientRect().width")
        assert 180 <= box <= width, box                  # a file name fits ("typ" did, at 80 px)
        names = page.eval_on_selector_all("#mvp-filter-video-names option", "els => els.map(e => e.value)")
        assert sorted(names) == sorted(videos)
        page.fill("#mvp-filter-video-find", name)
        assert page.input_value("#mvp-filter-video") == videos[name]
        page.click("#mvp-filter-go")
        page.wait_for_function("n => document.querySelector('#mvp-filter-now')?.innerText.includes(n)", arg=name,
                               timeout=15000)
        shot(page, f"curate-video-filter-{width}")
        page.click("#mvp-filter-clear")
        page.wait_for_function("() => document.querySelector('#mvp-filter-now')?.innerText.includes('every puzzle')",
                               timeout=15000)
        assert page.input_value("#mvp-filter-video-find") == "" and page.input_value("#mvp-filter-video") == ""
    finally:
        ctx.close()

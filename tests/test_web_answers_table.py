"""The answers table on Rollouts, in the browser at 1280 and 390 px (fixtures_web_named_runs: a GRPO
checkpoint's answers on every stored puzzle, its start model's answers under the SFT run): one row
per puzzle beside the start model's result, sorted and filtered on the server, grouped by video
with intervals, and a clicked row opens its puzzle in the view above."""
from __future__ import annotations

import json

import pytest
from fixtures_web import shot
from fixtures_web_named_runs import GRPO, SFT
from testkit.web import dataframe_rows, pick

pytestmark = [pytest.mark.browser]


def _expected(Session) -> dict[str, dict]:
    """Per puzzle: the GRPO checkpoint's mean exact and total, and the SFT checkpoint's (its start model)."""
    from sqlalchemy import func, select

    from db.models.runs import Rollout
    out: dict[str, dict] = {}
    with Session() as s:
        for run, pid, ex, tot in s.execute(
                select(Rollout.run_id, Rollout.puzzle_id, func.avg(Rollout.exact), func.avg(Rollout.total))
                .where(Rollout.run_id.in_([GRPO, SFT])).group_by(Rollout.run_id, Rollout.puzzle_id)):
            out.setdefault(pid, {})[run] = float(ex)
            out[pid][run + " total"] = float(tot)
    return out


ROW = dataframe_rows("ro-t-rows")


def _rows(page, table: str = "ro-t-rows") -> list[list[str]]:
    return page.eval_on_selector_all(
        dataframe_rows(table),
        "rs => rs.map(r => [...r.querySelectorAll('.body-cell')].map(c => c.innerText.trim()))")


def _wait_status(page, text: str) -> None:
    page.wait_for_function(f"document.querySelector('#ro-t-status')?.innerText.includes({json.dumps(text)})",
                           timeout=60000)


@pytest.mark.parametrize("width", [1280, 390])
def test_answers_table_sorts_filters_groups_and_opens_a_puzzle(named_studio, open_as, width):
    want = _expected(named_studio.Session)
    n = len(want)
    page = open_as(named_studio.url, "rhea", "/rollouts/")
    page.set_viewport_size({"width": width, "height": 900})
    _wait_status(page, f"puzzle rows 1-{min(25, n)} of {n}")
    assert f"start model: {SFT}" in page.inner_text("#ro-t-status")
    headers = page.eval_on_selector_all("#ro-t-rows thead th", "ths => ths.map(t => t.innerText.trim())")
    for h in ("puzzle", "format", "selection", "order", "exact", "total", "distractor kinds", "start model exact"):
        assert any(h in x for x in headers), headers

    # sort by total reward, largest first: the server's order over every puzzle
    pick(page, "ro-t-sort", "total")
    page.locator("#ro-t-desc input").check()
    from db.runs.answers_table import SORT_DECIMALS      # means compare at these decimals, then by puzzle
    order = sorted(want, key=lambda p: (-round(want[p][GRPO + " total"], SORT_DECIMALS), p))
    # the whole column, not its first cell: the ascending sort before the tick can start with the same puzzle
    page.wait_for_function(
        "(ids) => JSON.stringify([...document.querySelectorAll('#ro-t-rows .virtual-row')].map("
        "r => r.querySelector('.body-cell')?.innerText.trim())) === JSON.stringify(ids)",
        arg=order, timeout=60000)
    assert [r[0] for r in _rows(page)] == order
    first = _rows(page)[0]
    assert abs(float(first[-1]) - want[first[0]][SFT]) < 1e-3       # the start model on the same puzzle

    # filter: only the puzzles every answer of which is exact, then wrong ones
    right = sum(1 for v in want.values() if v[GRPO] >= 1.0)
    page.locator("#ro-t-result label", has_text="wrong").click()
    _wait_status(page, f"of {n - right} ·")

    # group by video: one row per video with an interval
    page.locator("#ro-t-group label", has_text="video").click()
    page.wait_for_function("document.querySelector('#ro-t-groups .virtual-body')?.innerText.includes('[')",
                           timeout=60000)
    groups = _rows(page, "ro-t-groups")
    assert sum(int(g[2]) for g in groups) == n - right              # puzzles column: every wrong puzzle once
    assert {g[0] for g in groups} == {r[1] for r in _rows(page)}     # one group per video shown
    shot(page, f"rollouts-answers-table-{width}")

    # a row opens its puzzle in the view above
    pid = _rows(page)[-1][0]
    page.locator(ROW).last.locator(".body-cell").first.click()
    page.wait_for_function(f"document.querySelector('#ro-puzzle input')?.value.includes({json.dumps(pid)})",
                           timeout=60000)
    page.wait_for_function(f"document.querySelector('#ro-left h4')?.innerText.includes({json.dumps(pid)})",
                           timeout=60000)
    page.wait_for_selector("#ro-right .mvp-answers", timeout=60000)
    _check_layout(page, width)
    shot(page, f"rollouts-answers-panes-{width}")


def test_a_page_past_any_run_is_one_line(named_studio, open_as):
    page = open_as(named_studio.url, "rhea", "/rollouts/")
    page.wait_for_selector(ROW, timeout=60000)
    page.fill("#ro-t-page input", "999999999")
    page.press("#ro-t-page input", "Enter")
    page.wait_for_function("document.querySelector('#ro-t-msg')?.innerText.includes('answers table: offset')",
                           timeout=30000)
    assert len(page.inner_text("#ro-t-msg").strip().splitlines()) == 1


@pytest.fixture
def many_answers(named_studio):
    """A run with 16 answers per puzzle from one checkpoint, over two pages of answer rows; removed after."""
    from sqlalchemy import delete

    from db.models.runs import Checkpoint, Rollout, Run
    from testkit.store import store_answers
    run = "paging-run"
    store_answers(named_studio.Session, run, "rollout", "tiny-model", 1, "ckpt-1", 16, seed=5)
    yield run
    with named_studio.Session() as s:
        for table in (Rollout, Checkpoint):
            s.execute(delete(table).where(table.run_id == run))
        s.execute(delete(Run).where(Run.id == run))
        s.commit()


def test_pages_step_back_and_forth_and_a_change_goes_to_page_one(named_studio, many_answers, open_as):
    """Next, Previous and a typed page number show those rows; a sort change afterwards starts again
    on page 1 (each control's change is one event that reads the page as it is then)."""
    page = open_as(named_studio.url, "rhea", "/rollouts/")
    page.wait_for_selector(ROW, timeout=60000)
    pick(page, "ro-ckpt", many_answers)
    _wait_status(page, "puzzle rows 1-")
    page.locator("#ro-t-level label", has_text="per answer").click()
    n = 16 * len(_expected(named_studio.Session))
    assert n > 50, n           # three pages at least
    _wait_status(page, f"answer rows 1-25 of {n} · page 1 ")
    page.click("#ro-t-next")
    _wait_status(page, f"answer rows 26-50 of {n} · page 2 ")
    page.click("#ro-t-next")
    _wait_status(page, f"answer rows 51-{min(75, n)} of {n} · page 3 ")
    page.click("#ro-t-prev")
    _wait_status(page, f"answer rows 26-50 of {n} · page 2 ")
    page.fill("#ro-t-page input", "3")
    page.press("#ro-t-page input", "Enter")
    _wait_status(page, " · page 3 ")
    assert page.input_value("#ro-t-page input") == "3"
    page.click("#ro-t-prev")
    page.click("#ro-t-prev")                # two quick clicks: page 1, as each one steps the page shown
    _wait_status(page, f"answer rows 1-25 of {n} · page 1 ")
    page.click("#ro-t-next")
    _wait_status(page, " · page 2 ")
    pick(page, "ro-t-sort", "total")
    _wait_status(page, f"answer rows 1-25 of {n} · page 1 ")
    assert page.input_value("#ro-t-page input") == "1"


def _check_layout(page, width: int) -> None:
    """Nothing the user needs is cut off or drawn over: every link of the top bar and its "Log out" lie
    inside the viewport, no column name of the answer tables runs past its cell, and at phone width the
    two answer panes stack (side by side their columns overlapped)."""
    off = page.eval_on_selector_all(".mvp-nav a, .mvp-nav button", f"""els => els.filter(e => {{
        const r = e.getBoundingClientRect(); return r.right > {width} + 1 || r.left < 0; }}).map(e => e.innerText)""")
    assert off == [], f"top-bar items outside the {width} px viewport: {off}"
    spill = page.eval_on_selector_all(".mvp-answers th", "ths => ths.filter(t => t.scrollWidth > t.clientWidth + 1)"
                                                         ".map(t => t.innerText)")
    assert spill == [], f"column names wider than their cells: {spill}"
    # both boxes in one evaluation, in page coordinates: the row's click scrolls the view into sight, and
    # two viewport readings with a scroll between them would not compare
    left, right = page.evaluate("""() => ['#ro-left', '#ro-right'].map(s => {
        const r = document.querySelector(s).getBoundingClientRect();
        return {x: r.left + scrollX, y: r.top + scrollY, width: r.width, height: r.height}; })""")
    if width < 600:
        assert right["y"] >= left["y"] + left["height"] - 1, (left, right)
    else:
        assert abs(right["y"] - left["y"]) < 2 and right["x"] >= left["x"] + left["width"] - 1, (left, right)

"""The researcher's and the admin's pages in Chromium: a video's rollouts with G answers and their
rewards, the stats charts, and an admin adding a user who can then log in."""
from __future__ import annotations

import pytest
from fixtures_web import RUN_ID, G, login, shot
from playwright.sync_api import TimeoutError as PlaywrightTimeout
from sqlalchemy import select
from testkit.web import EVENT_HOOK, dataframe_rows, pick, wait_settled

pytestmark = [pytest.mark.browser, pytest.mark.slow]


def test_researcher_sees_a_videos_rollouts(web_app, open_as):
    from db.models import Puzzle, Video
    from db.models.runs import Rollout
    page = open_as(web_app, "rhea", "/rollouts/")
    page.wait_for_selector(".mvp-answer-row", timeout=30000)
    with web_app.Session() as s:
        vid, vpath = s.execute(select(Video.id, Video.path).where(Video.path.like("%bikes%"))).one()
        pids = s.scalars(select(Puzzle.id).where(Puzzle.video_id == vid).order_by(Puzzle.id)).all()
    name = vpath.rsplit("/", 1)[-1]
    if name not in page.input_value("#ro-video input"):
        # the video's event answers with its puzzles and its first puzzle: a puzzle picked before that
        # answer is overwritten by it, as it would be for a user as quick
        with page.expect_response(lambda r: r.request.method == "POST" and "/gradio_api/" in r.url,
                                  timeout=30000):
            pick(page, "ro-video", name)
    page.wait_for_selector(f".mvp-rollouts h4:has-text('{pids[0]}')", timeout=15000)
    pid = pids[-1]
    pick(page, "ro-puzzle", pid)
    # the page opens on the run's checkpoint (left) beside the model the run started from (right)
    want = f"{pid} · {RUN_ID} · model:"
    try:
        page.wait_for_selector(f"#ro-right .mvp-rollouts h4:has-text('{want}')", timeout=15000)
    except PlaywrightTimeout:       # say what the page showed instead
        shown = page.evaluate("() => [...document.querySelectorAll('#ro-left h4, #ro-right h4')]"
                              ".map(h => h.innerText)")
        picked = [page.input_value(f"#{i} input") for i in ("ro-ckpt", "ro-ckpt2", "ro-video", "ro-puzzle")]
        raise AssertionError(f"wanted {want!r} on the right; the panes' headings {shown}, controls {picked}")
    assert f"{RUN_ID} · step 5" in page.inner_text("#ro-left h4")
    rows = page.locator("#ro-right .mvp-answer-row")
    assert rows.count() == G
    with web_app.Session() as s:
        totals = [r.total for r in s.scalars(select(Rollout).where(
            Rollout.run_id == RUN_ID, Rollout.checkpoint_id.is_(None), Rollout.puzzle_id == pid)
            .order_by(Rollout.sample_index))]
    shown = [float(rows.nth(i).locator(".mvp-total").inner_text()) for i in range(G)]
    assert shown == pytest.approx(totals, abs=1e-3)
    assert page.locator("#ro-right .mvp-seq img").count() >= G       # chosen frames as thumbnails
    assert "random-weight" in page.inner_text("body")
    # a second checkpoint side by side
    pick(page, "ro-ckpt2", "step 5")
    page.wait_for_selector("#ro-right .mvp-answer-row", timeout=15000)
    assert page.locator("#ro-right .mvp-answer-row").count() == G
    shot(page, "rollouts")


def _second_run(Session, run_id: str) -> None:
    """Another run (older, so not the page's default) that answered the same puzzles: its base model
    and a step-3 checkpoint, G answers each, scored by the real reward."""
    from datetime import datetime, timezone

    from db.models import Puzzle
    from db.models.runs import Checkpoint, Rollout, Run
    from mvp_core.reward import score_completion
    with Session() as s:
        s.add(Run(id=run_id, name="second", kind="train", model_path="tiny-random-qwen25vl", config={},
                  status="done", created_at=datetime(2001, 1, 1, tzinfo=timezone.utc)))
        s.flush()
        ck = Checkpoint(run_id=run_id, step=3, path="ckpt-3")
        s.add(ck)
        s.flush()
        import json
        for row in s.scalars(select(Puzzle).order_by(Puzzle.id)):
            rec = json.loads(row.record_json)
            labels = [o["label"] for o in rec["options"]]
            for cid in (None, ck.id):
                for g in range(G):
                    text = f"<think>{run_id} {cid} {g}</think><answer>{', '.join(labels[:len(rec['answer'])])}</answer>"
                    t = score_completion(text, rec["answer"], labels)
                    s.add(Rollout(run_id=run_id, checkpoint_id=cid, puzzle_id=row.id, sample_index=g,
                                  completion=text, chosen_labels=t.labels, format=t.format, selection=t.selection,
                                  order=t.order, exact=t.exact, total=t.total))
        s.commit()


def _drop_run(Session, run_id: str) -> None:
    from sqlalchemy import delete

    from db.models.runs import Checkpoint, Rollout, Run
    with Session() as s:
        s.execute(delete(Rollout).where(Rollout.run_id == run_id))
        s.execute(delete(Checkpoint).where(Checkpoint.run_id == run_id))
        s.execute(delete(Run).where(Run.id == run_id))
        s.commit()


def test_switching_runs_with_the_same_puzzle_shows_the_new_runs_answers(web_app, open_as):
    """Two runs answered the same puzzles. Switching the left version to the other run puts that
    run's answers on both sides (its base model beside its own checkpoint), never the previous run's
    group left over on the right; and back again."""
    other = "web-test-run-b"
    _second_run(web_app.Session, other)
    page = open_as(web_app, "rhea", "/rollouts/")
    try:
        page.wait_for_selector("#ro-right .mvp-answer-row", timeout=30000)
        assert f"{RUN_ID} · step 5" in page.inner_text("#ro-left h4")
        assert f"{RUN_ID} · model:" in page.inner_text("#ro-right h4")
        pid = page.locator("#ro-puzzle-view").get_attribute("data-puzzle-id")
        pick(page, "ro-ckpt", f"{other} · start:")
        page.wait_for_selector(f"#ro-left h4:has-text('{other} · start:')", timeout=15000)
        page.wait_for_selector(f"#ro-right h4:has-text('{other} · step 3')", timeout=15000)
        assert page.locator("#ro-puzzle-view").get_attribute("data-puzzle-id") == pid     # the same puzzle id
        assert "step 3" in page.input_value("#ro-ckpt2 input") and other in page.input_value("#ro-ckpt2 input")
        for side in ("left", "right"):
            thinks = page.locator(f"#ro-{side} .mvp-think").all_inner_texts()
            assert len(thinks) == G and all(t.startswith(other) for t in thinks), (side, thinks)
        pick(page, "ro-ckpt", f"{RUN_ID} · model:")
        page.wait_for_selector(f"#ro-left h4:has-text('{RUN_ID} · model:')", timeout=15000)
        page.wait_for_selector(f"#ro-right h4:has-text('{RUN_ID} · step 5')", timeout=15000)
        assert not any(t.startswith(other) for t in page.locator("#ro-right .mvp-think").all_inner_texts())
    finally:
        _drop_run(web_app.Session, other)


def test_zero_variance_group_is_flagged(web_app, open_as):
    from db import review
    from db.models import Puzzle, Video
    from db.models.curation import VerdictEvent
    ada, rhea = web_app.user_id("ada"), web_app.user_id("rhea")   # own sessions: not inside another (SQLite)
    with web_app.Session() as s:
        first = s.scalars(select(Puzzle.id).order_by(Puzzle.id)).first()      # its base answers are identical
        vpath = s.scalar(select(Video.path).join(Puzzle, Puzzle.video_id == Video.id).where(Puzzle.id == first))
        review.submit_verdict(s, ada, first, "accept")                         # judged, out of the queue
        # (another test of the shared app may have judged it too: it is out of the queue either way)
        assert review.puzzle_status(s, first)["status"] in ("accepted", "disputed")
    page = open_as(web_app, "rhea", "/rollouts/")
    page.wait_for_selector(".mvp-answer-row", timeout=30000)
    pick(page, "ro-ckpt", f"{RUN_ID} · model:")               # the start model's group is the identical one
    page.wait_for_selector(f"#ro-left h4:has-text('{RUN_ID} · model:')", timeout=15000)
    pick(page, "ro-video", vpath.rsplit("/", 1)[-1])
    pick(page, "ro-puzzle", first)
    page.wait_for_selector("#ro-left [data-zero-variance]", timeout=15000)
    assert "ZERO VARIANCE" in page.input_value("#ro-puzzle input")
    shot(page, "rollouts_zero_variance")
    # one click sends it back to the curation queue: pending again, the requeue in the history
    page.click("#ro-requeue")
    page.wait_for_selector(f"#ro-msg:has-text('{first} is back in the curation queue')", timeout=15000)
    with web_app.Session() as s:
        st = review.puzzle_status(s, first)
        assert (st["status"], st["verdicts"]) == ("pending", [])
        ev = s.scalars(select(VerdictEvent).where(VerdictEvent.puzzle_id == first,
                                                  VerdictEvent.action == "requeue")).all()
        assert [(e.user_id, e.after["reason"]) for e in ev] == [
            (rhea, "zero-variance group in rollouts")]


def test_stats_page_renders_charts(web_app, open_as):
    page = open_as(web_app, "rhea", "/stats/")
    page.wait_for_selector("#stats-status", timeout=30000)
    page.wait_for_function("() => /target/.test(document.querySelector('#stats-model_picks_by_kind')?.innerText ?? '')",
                           timeout=30000)
    page.wait_for_selector("#stats-status svg, #stats-status canvas", timeout=30000)
    page.wait_for_timeout(500)
    shot(page, "stats")
    page.click("#nav-train")                                   # the trainer's page, mounted for researchers
    page.wait_for_selector("#train-state", timeout=30000)
    assert "rhea (researcher)" in page.inner_text(".mvp-nav")
    shot(page, "train")


def test_admin_adds_a_user_who_can_log_in(web_app, browser, open_as):
    page = open_as(web_app, "ada", "/admin/")
    page.wait_for_selector("#admin-users", timeout=30000)
    page.fill("#admin-name input, #admin-name textarea", "newbie")
    pick(page, "admin-role", "researcher")
    page.fill("#admin-password input", "newbie-pass-1")
    page.click("#admin-add")
    page.wait_for_selector("#admin-msg:has-text('added newbie')", timeout=15000)
    # the table shows the rows that fit its height, newest first: the new user leads it however many
    # users earlier tests made (sorted by name it fell below the fold once they were many)
    first = page.locator(dataframe_rows("admin-users")).first.inner_text().split()
    assert first[:2] == ["newbie", "researcher"], first
    shot(page, "admin")
    ctx, page = login(browser, web_app, "newbie", "newbie-pass-1", path="/rollouts/")
    page.wait_for_selector(".mvp-answer-row", timeout=30000)
    assert "newbie (researcher)" in page.inner_text(".mvp-nav")
    ctx.close()


CONTRAST_JS = """sel => {
  const rgb = s => { const m = s.match(/[\\d.]+/g).map(Number); return {r: m[0], g: m[1], b: m[2], a: m.length > 3 ? m[3] : 1}; };
  const lum = c => { const f = v => { v /= 255; return v <= 0.03928 ? v / 12.92 : Math.pow((v + 0.055) / 1.055, 2.4); };
                     return 0.2126 * f(c.r) + 0.7152 * f(c.g) + 0.0722 * f(c.b); };
  const bg = el => { for (let e = el; e; e = e.parentElement) { const c = rgb(getComputedStyle(e).backgroundColor);
                     if (c.a > 0.5) return c; } return rgb(getComputedStyle(document.body).backgroundColor); };
  return Array.from(document.querySelectorAll(sel)).filter(e => e.offsetParent !== null && e.innerText.trim())
    .slice(0, 20).map(e => { const a = lum(rgb(getComputedStyle(e).color)), b = lum(bg(e));
      return [sel, e.innerText.trim().slice(0, 30), (Math.max(a, b) + 0.05) / (Math.min(a, b) + 0.05),
              getComputedStyle(e).color, JSON.stringify(bg(e))]; });
}"""
# Text the studio styles itself, on every page it appears on; Gradio's own widgets follow its theme.
STYLED = ("kbd", ".mvp-nav-link", ".mvp-user", ".mvp-cap", ".mvp-msg", ".mvp-rubric p", ".mvp-phead span",
          ".mvp-progress span", ".mvp-table td", ".mvp-data", ".mvp-help td")


@pytest.mark.parametrize("theme", ["dark", "light"])
def test_every_page_is_legible_in_both_themes(web_app, open_as, theme):
    """Dark mode works on every page: each text the studio styles keeps a WCAG AA contrast (4.5:1)
    against what is behind it, in the dark and the light theme; the favicon is served."""
    page = open_as(web_app, "ada", f"/curate/?__theme={theme}")
    page.wait_for_selector("#mvp-puzzle", timeout=30000)
    checked = 0
    for name in ("curate", "gallery", "datasets", "rollouts", "stats", "train", "admin"):
        page.goto(f"{web_app.url}/{name}/?__theme={theme}")
        page.wait_for_selector(".mvp-nav", timeout=30000)
        wait_settled(page)                      # the page's own content drawn before its colours are read
        assert page.evaluate("() => document.body.classList.contains('dark')") == (theme == "dark"), name
        if name == "curate":
            page.keyboard.press("?")                              # the key hints too
            page.wait_for_selector("#mvp-help:not([hidden])")
        low = [r for sel in STYLED for r in page.evaluate(CONTRAST_JS, sel) if r[2] < 4.5]
        checked += sum(len(page.evaluate(CONTRAST_JS, sel)) for sel in STYLED)
        assert not low, (name, low)
        shot(page, f"{name}_{theme}")
    assert checked > 30
    resp = page.request.get(web_app.url + "/favicon.ico")
    assert resp.status == 200 and resp.headers["content-type"] == "image/x-icon" and resp.body()[:4] == b"\0\0\1\0"


# each event the page sent (testkit/web.py EVENT_HOOK): [its api name, its trigger, the trigger it follows from
# through `.then` links (a load, a tick, or a person's action)]
SENT_JS = """() => { const deps = window.gradio_config.dependencies;
  const trig = (d) => d.targets.map(t => t[1]).join(',');
  const root = (d) => { while (trig(d) === 'then' && d.trigger_after != null) d = deps[d.trigger_after]; return d; };
  return window.__phases.filter(p => p[1] === 'event')
    .map(p => { const d = deps[p[2]]; return [d.api_name, trig(d), trig(root(d))]; }); }"""


def test_opening_a_page_sends_its_load_events_and_nothing_they_set_off(web_app, open_as):
    """A page's first view comes in its load answers: a picker a load fills (a run, a set) fires no event of
    its own, so nothing is asked after them. Before, the Rollouts page's panels answered six rounds deep
    (a run set, then its checkpoints, then the label count...) and settled at ~1.2 s; the Train page two
    (docs/web.md, "Pickers a load fills"). Timer ticks (live job views) may run beside them."""
    page = open_as(web_app, "ada", "/datasets/")
    page.wait_for_selector(".mvp-nav", timeout=30000)
    page.add_init_script(EVENT_HOOK)
    for name in ("curate", "gallery", "datasets", "rollouts", "stats", "train", "admin"):
        page.goto(f"{web_app.url}/{name}/")
        page.wait_for_selector(".mvp-nav", timeout=30000)
        wait_settled(page, quiet_ms=800)            # long enough for a change event's answer to start another
        sent = page.evaluate(SENT_JS)
        assert sent, name                                                   # the hook saw the page's load
        assert all(root in ("load", "tick") for _, _, root in sent), (name, sent)

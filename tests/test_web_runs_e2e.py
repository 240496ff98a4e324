"""The loop the studio exists for, in real Chromium, from an empty data directory (fixtures_web_runs):
puzzles from `mvp synth`, verdicts through the curate page's HTTP API, a frozen set, a GRPO run
launched from the Train page on the real MVP reward whose live chart draws points in the same
tab, two checkpoints (base model and the trained one) evaluated from the Rollouts page as
background jobs (rollouts with G=8, and evals with the baselines), then compared side by side
on one puzzle: filmstrip and gap, prompt, reasoning, chosen frames in the gap, reward terms and
the training advantage; the eval results on the Rollouts and Stats pages."""
from __future__ import annotations

import json
import re
import time

import pytest
from fixtures_web import login, shot
from testkit.web import pick

pytestmark = [pytest.mark.browser, pytest.mark.slow]
SET = "e2e-set"
G = 8


def curate_all(browser, studio) -> int:
    """The curator solves each puzzle (its true answer), then accepts it, through POST
    /curate/api/* (what app/web/pages/curate/curate.js calls)."""
    from db.models import Puzzle
    ctx, _page = login(browser, studio, "cora", path="/curate/")
    try:
        post = lambda action, body: ctx.request.post(f"{studio.url}/curate/api/{action}", data=json.dumps(body),
                                                     headers={"Content-Type": "application/json"})
        r = post("load", {})
        assert r.ok, r.text()
        out, n = r.json(), 0
        while out.get("state", {}).get("pid"):
            with studio.Session() as s:
                answer = json.loads(s.get(Puzzle, out["state"]["pid"]).record_json)["answer"]
            r = post("answer", {"labels": answer, "seconds": 3.0, "state": out["state"]})
            assert r.ok, r.text()
            r = post("verdict", {"verdict": "accept", "state": r.json()["state"]})
            assert r.ok, r.text()
            out, n = r.json(), n + 1
        return n
    finally:
        ctx.close()


def launch_training(page, studio, trainer: str, model_label: str | None, steps: int) -> dict:
    """Fill the Train form and launch; returns the job once its first live point is drawn."""
    # the page's load event has filled the form and made it editable (a refresh tick can draw #train-state
    # first, and a click on the still read-only trainer radio is lost)
    page.wait_for_function("document.querySelector('#train-launch')?.disabled === false", timeout=60000)
    if trainer == "sft":
        page.locator("#train-trainer label", has_text="SFT").click()
        page.wait_for_selector("#train-reward", state="hidden", timeout=30000)
    else:
        page.locator("#train-trainer label", has_text="GRPO").click()
        page.wait_for_selector("#train-reward", state="visible", timeout=30000)
        assert page.locator("#train-reward input").input_value() == "mvp"       # the real reward
    if model_label:
        pick(page, "train-model", model_label)
    page.locator("#train-max-steps input").fill(str(steps))
    page.locator("#train-save-steps input").fill("1")
    page.locator("#train-max-len input").fill("12")
    prev = page.locator("#train-state").get_attribute("data-run") or ""
    t_click = time.time()
    page.click("#train-launch")
    # the new run's first point, drawn in this tab (state and charts arrive in the same update)
    page.wait_for_function("prev => { const st = document.querySelector('#train-state');"
                           " return st && st.dataset.run && st.dataset.run !== prev"
                           " && document.querySelector('#train-reward-chart circle'); }", arg=prev, timeout=300000)
    t_point = time.time()
    job = json.loads((studio.data_dir / "train" / "active.json").read_text())
    first = json.loads((studio.data_dir / "runs" / job["run_dir"].rsplit("/", 1)[-1] / "metrics.jsonl")
                       .read_text().splitlines()[0])
    studio.shared[f"first_point_{trainer}"] = {"click_to_point_s": t_point - t_click,
                                               "start_to_first_step_s": first["time"] - job["started"]}
    print(f"[e2e] {trainer}: launch to first live point {t_point - t_click:.1f}s; trainer start to first step "
          f"{first['time'] - job['started']:.1f}s", flush=True)
    wait_attr(page, "#train-state", "data-state", lambda v: v in ("finished", "died", "failed"), 300)
    assert page.locator("#train-state").get_attribute("data-state") == "finished", page.inner_text("#train-log")
    page.wait_for_function(f"document.querySelector('#train-log')?.textContent.includes('step {steps}')",
                           timeout=30000)
    return job


def wait_attr(page, selector: str, attr: str, pred, timeout_s: float):
    deadline = time.time() + timeout_s
    last = None
    while time.time() < deadline:
        el = page.locator(selector)
        if el.count():
            last = el.first.get_attribute(attr)
            if last is not None and pred(last):
                return last
        time.sleep(0.25)
    raise AssertionError(f"{selector}[{attr}] stayed {last!r}")


# Each step is a module-scoped fixture that builds on the one before (one studio, one trained run), so
# any test runs alone or in any order: it asks for the step it checks and gets the earlier ones built.
# A test run alone builds the whole chain in its setup, hence the limit covering the chain.
pytestmark.append(pytest.mark.timeout(1800))


@pytest.fixture(scope="module")
def frozen(studio, browser) -> str:
    from db.sets.curated import freeze_set
    phase("studio ready")
    from sqlalchemy import func, select

    from db.models import Puzzle
    with studio.Session() as s:
        n_puzzles = s.scalar(select(func.count()).select_from(Puzzle))
    assert n_puzzles >= 2 and curate_all(browser, studio) == n_puzzles   # every synthesized puzzle, once
    with studio.Session() as s:
        freeze_set(s, SET, min_distractors=2)
        s.commit()
    phase("curated and frozen")
    return SET


def test_1_curate_and_freeze(studio, frozen):
    from sqlalchemy import select

    from db.models import CuratedSet
    with studio.Session() as s:
        assert s.scalar(select(CuratedSet.n_puzzles).where(CuratedSet.name == frozen)) >= 2


@pytest.fixture(scope="module")
def trained(studio, browser, frozen) -> str:
    """SFT, then GRPO from the SFT checkpoint on the real reward; live points in the launching tab."""
    ctx, page = login(browser, studio, "rhea", path="/train/")
    try:
        page.wait_for_function("document.querySelector('#train-model input')?.value.includes('tiny-model')",
                               timeout=60000)
        sft = launch_training(page, studio, "sft", None, 2)
        assert page.locator("#train-reward-chart circle[data-series='token accuracy']").count() == 2
        shot(page, "e2e-train-sft")
        phase("sft")
        page.reload()                              # the model picker now lists the SFT checkpoints
        page.wait_for_function("document.querySelector('#train-launch')?.disabled === false", timeout=60000)
        assert page.locator("#train-reward").is_hidden()          # the form shows the SFT run's settings
        sft_id = sft["run_dir"].rsplit("/", 1)[-1]
        job = launch_training(page, studio, "grpo", f"{sft_id} · step 2 · SFT from", 2)
        assert job["model"].endswith("checkpoints/step_000002")
        assert page.locator("#train-reward-chart circle[data-series=reward]").count() == 2
        assert page.locator("#train-reward-chart circle[data-series=exact]").count() == 2
        shot(page, "e2e-train-grpo")
        phase("grpo")
        page.reload()                                       # the form shows the run's settings again
        page.wait_for_function("document.querySelector('#train-max-steps input')?.value === '2'", timeout=30000)
        page.wait_for_selector("#train-runs-table tr[data-run]", timeout=30000)
        assert page.locator("#train-runs-table tr[data-run]").count() == 2
        run_id = page.locator("#train-runs-table tr[data-run]").first.get_attribute("data-run")
        assert run_id == job["run_dir"].rsplit("/", 1)[-1]
        assert int(page.locator("#train-runs-reward").get_attribute("data-points")) == 2
        pick(page, "train-c-run", run_id)
        pick(page, "train-c-step", "2")
        wait_attr(page, "#train-completions", "data-rows", lambda v: int(v) == 8, 30)
        shot(page, "e2e-train-runs")
    finally:
        ctx.close()
    return run_id


def test_2_sft_then_grpo_from_the_train_page(studio, trained):
    assert (studio.data_dir / "runs" / trained / "metrics.jsonl").is_file()


@pytest.fixture(scope="module")
def evaluated(studio, browser, trained) -> str:
    """Rollouts (G=8) of the base model and the trained checkpoint, and the trained one's eval, as
    background jobs; then both side by side on one puzzle."""
    run_id = trained
    ctx, page = login(browser, studio, "rhea", path="/rollouts/")
    try:
        page.wait_for_selector("#ro-job-launch", timeout=60000)
        pick(page, "ro-job-run", run_id)
        # one job of each kind at a time: the rollouts of both versions one after the other, the
        # trained checkpoint's eval (with the baselines) beside the first
        # (the start model's label names the SFT checkpoint, "start: warm start SFT run R step 2": match whole labels)
        for ck_label, kinds in (("step 2", ("rollout", "eval")), ("start:", ("rollout",))):
            pick(page, "ro-job-ckpt", re.compile(r"^\W*step 2\s*$") if ck_label == "step 2" else ck_label)
            for kind in kinds:
                launch_job(page, kind)
            for kind in kinds:
                wait_attr(page, f"#ro-jobs .mvp-job[data-kind={kind}]", "data-state",
                          lambda v: v in ("done", "failed"), 300)
                assert page.locator(f"#ro-jobs .mvp-job[data-kind={kind}]").get_attribute("data-state") == "done", \
                    page.inner_text("#ro-jobs")
            phase(f"jobs {ck_label}")
        page.click("#ro-refresh")
        # the newest checkpoint on the left, the model its run started from (the SFT checkpoint) on the right
        page.wait_for_selector(f"#ro-left .mvp-rollouts h4:has-text('{run_id} · step 2 · GRPO from warm start SFT run')",
                               timeout=120000)
        page.wait_for_selector(f"#ro-right .mvp-rollouts h4:has-text('{run_id} · start: warm start SFT run')",
                               timeout=30000)
        left, right = page.locator("#ro-left .mvp-answer-row"), page.locator("#ro-right .mvp-answer-row")
        assert left.count() == G and right.count() == G
        pid = page.locator("#ro-puzzle-view").get_attribute("data-puzzle-id")
        assert pid and page.locator("#ro-puzzle-view .mvp-gap").count() == 1          # filmstrip with the gap
        assert "Candidate frames" in page.locator("#ro-prompt").text_content()
        assert page.locator("#ro-left .mvp-answer-row .mvp-ingap .mvp-gap").count() == G   # answers in the gap
        _check_advantages(left)
        _check_advantages(right)
        page.wait_for_selector("#eval-results tr[data-eval]", timeout=30000)
        assert page.locator("#eval-results tr[data-eval]").count() == 1
        assert page.locator("#eval-results .mvp-baseline").count() >= 2
        assert int(page.locator("#eval-chart-total").get_attribute("data-points")) == 1     # the one eval
        assert page.locator("#eval-chart-total [data-baseline-label]").count() >= 2        # labelled baselines
        shot(page, "e2e-rollouts")
        phase("compared")
    finally:
        ctx.close()
    return run_id


def test_3_evaluate_two_checkpoints_from_the_rollouts_page(evaluated, trained):
    assert evaluated == trained


def test_4_stats_show_the_eval_per_checkpoint(studio, browser, evaluated):
    ctx, page = login(browser, studio, "rhea", path="/stats/")
    try:
        page.wait_for_selector("#eval-results tr[data-eval]", timeout=60000)
        assert page.locator("#eval-by-group tr[data-group^='kind:']").count() >= 1
        assert page.locator("#eval-by-group tr[data-group^='hardness:']").count() >= 1
        shot(page, "e2e-stats")
    finally:
        ctx.close()


def launch_job(page, kind: str) -> None:
    job_el = f"#ro-jobs .mvp-job[data-kind={kind}]"
    before = float(page.locator(job_el).get_attribute("data-started") or 0)
    page.locator("#ro-job-kind label", has_text=f"{kind}:").click()
    page.locator("#ro-job-G input").fill(str(G))
    page.click("#ro-job-launch")
    wait_attr(page, job_el, "data-started", lambda v: float(v) > before, 30)


T0 = [time.time()]


def phase(name: str) -> None:
    """Where the test's time goes (printed; the shared machine is noisy)."""
    now = time.time()
    print(f"[e2e] {name}: {now - T0[0]:.1f}s", flush=True)
    T0[0] = now


def _check_advantages(rows) -> None:
    """The page's advantage of each answer is the trainer's formula applied to the shown totals."""
    import torch

    from mvp_core.train.loss import group_advantages
    totals = [float(rows.nth(i).get_attribute("data-total")) for i in range(rows.count())]
    shown = [float(rows.nth(i).get_attribute("data-advantage")) for i in range(rows.count())]
    want = group_advantages(torch.tensor(totals, dtype=torch.float64), len(totals)).advantages.tolist()
    assert shown == pytest.approx(want, abs=1e-5)

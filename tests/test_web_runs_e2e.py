"""The loop the studio exists for, in real Chromium, from an empty data directory (fixtures_web_runs):
puzzles from `mvp synth`, verdicts through the curate page's HTTP API, a frozen set, a GRPO run
launched from the Train page on the real MVP reward whose live chart draws points in the same
tab, two checkpoints (base model and the trained one) evaluated from the Rollouts page as
background jobs (rollouts with G=8, and evals with the baselines), then compared side by side
on one puzzle: filmstrip and gap, prompt, reasoning, chosen frames in the gap, reward terms and
the training advantage; the eval results on the Rollouts and Stats pages."""
from __future__ import annotations

import json
import time

import pytest
from fixtures_web import login, shot

pytestmark = [pytest.mark.browser, pytest.mark.slow]
SET = "e2e-set"
G = 8


def pick(page, elem_id: str, text: str) -> None:
    page.click(f"#{elem_id} input")
    page.locator("li[role=option]", has_text=text).first.click()


def curate_all(browser, studio) -> int:
    """The curator accepts every puzzle through POST /curate/api/* (what static/curate.js calls)."""
    ctx, page = login(browser, studio, "cora", path="/curate/")
    try:
        post = lambda action, body: ctx.request.post(f"{studio.url}/curate/api/{action}", data=json.dumps(body),  # noqa: E731
                                                     headers={"Content-Type": "application/json"})
        r = post("load", {})
        assert r.ok, r.text()
        out, n = r.json(), 0
        while out.get("state", {}).get("pid"):
            r = post("verdict", {"verdict": "accept", "state": out["state"]})
            assert r.ok, r.text()
            out, n = r.json(), n + 1
        return n
    finally:
        ctx.close()


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


def test_train_evaluate_compare(studio, browser):
    from db.sets import freeze_set
    phase("studio ready")
    assert curate_all(browser, studio) == 6
    with studio.Session() as s:
        freeze_set(s, SET, min_distractors=2)
        s.commit()

    phase("curated and frozen")
    # --- Train: GRPO on the real reward, live points in the launching tab -------------------------
    ctx, page = login(browser, studio, "rhea", path="/train/")
    try:
        page.wait_for_function("document.querySelector('#train-model input')?.value.includes('tiny-model')",
                               timeout=60000)
        assert page.locator("#train-reward input").input_value() == "mvp"
        page.locator("#train-max-steps input").fill("4")
        page.locator("#train-save-steps input").fill("2")
        page.locator("#train-max-len input").fill("12")
        t_click = time.time()
        page.click("#train-launch")
        page.wait_for_selector("#train-reward-chart circle[data-series=reward]", timeout=240000)
        t_point = time.time()
        job = json.loads((studio.data_dir / "train" / "active.json").read_text())
        first = json.loads((studio.data_dir / "runs" / job["run_dir"].rsplit("/", 1)[-1] / "metrics.jsonl")
                           .read_text().splitlines()[0])
        studio.shared["first_point"] = {"click_to_point_s": t_point - t_click,
                                        "start_to_first_step_s": first["time"] - job["started"]}
        # the terms are drawn too, and the log shows its end
        assert page.locator("#train-reward-chart circle[data-series=exact]").count() >= 1
        wait_attr(page, "#train-state", "data-state", lambda v: v == "finished", 240)
        page.wait_for_function("document.querySelector('#train-log').textContent.includes('step 4:')", timeout=30000)
        assert int(page.locator("#train-reward-chart").get_attribute("data-points")) >= 4 * 5
        shot(page, "e2e-train")
        phase("trained")
        page.reload()                                       # the form shows the run's settings again
        page.wait_for_function("document.querySelector('#train-max-steps input')?.value === '4'", timeout=30000)
        page.wait_for_selector("#train-runs-table tr[data-run]", timeout=30000)
        run_id = page.locator("#train-runs-table tr[data-run]").first.get_attribute("data-run")
        studio.shared["run_id"] = run_id
        page.wait_for_selector("#train-completions[data-rows]", timeout=30000)
        pick(page, "train-c-step", "4")
        wait_attr(page, "#train-completions", "data-rows", lambda v: int(v) == 8, 30)
        shot(page, "e2e-train-runs")
    finally:
        ctx.close()

    # --- Evaluate two checkpoints from the Rollouts page --------------------------------------------
    ctx, page = login(browser, studio, "rhea", path="/rollouts/")
    try:
        page.wait_for_selector("#ro-job-launch", timeout=60000)
        pick(page, "ro-job-run", run_id)
        # one job of each kind at a time: the rollouts of both versions one after the other, the
        # trained checkpoint's eval (with the baselines) beside the first
        for ck_label, kinds in (("step 4", ("rollout", "eval")), ("base model", ("rollout",))):
            pick(page, "ro-job-ckpt", ck_label)
            for kind in kinds:
                launch_job(page, kind)
            for kind in kinds:
                wait_attr(page, f"#ro-jobs .mvp-job[data-kind={kind}]", "data-state",
                          lambda v: v in ("done", "failed"), 300)
                assert page.locator(f"#ro-jobs .mvp-job[data-kind={kind}]").get_attribute("data-state") == "done", \
                    page.inner_text("#ro-jobs")
            phase(f"jobs {ck_label}")
        page.click("#ro-refresh")
        page.wait_for_selector(f"#ro-left .mvp-rollouts h4:has-text('{run_id} · base model')", timeout=30000)
        page.wait_for_selector(f"#ro-right .mvp-rollouts h4:has-text('{run_id} · step 4')", timeout=30000)
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
        assert int(page.locator("#eval-chart-total").get_attribute("data-points")) >= 2
        shot(page, "e2e-rollouts")
        phase("compared")
    finally:
        ctx.close()

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

    from mvp_core.grpo.loss import group_advantages
    totals = [float(rows.nth(i).get_attribute("data-total")) for i in range(rows.count())]
    shown = [float(rows.nth(i).get_attribute("data-advantage")) for i in range(rows.count())]
    want = group_advantages(torch.tensor(totals, dtype=torch.float64), len(totals)).advantages.tolist()
    assert shown == pytest.approx(want, abs=1e-5)

"""Energy steering from the browser (docs/steer.md): the Rollouts page trains a
bank as a background job (`mvp steer build`: states of the tiny Qwen2.5-VL over real-frame puzzles of
a curated set's train split, labelled by the run's stored answers, then one energy per layer) with
progress and the per-layer table, re-attached after a reload; lists the banks with the model each
was trained on; applies a bank to its own model, and refuses one trained on another model with one
line unless "apply to another model anyway" is ticked.

Its own data directory and server: four videos' puzzles (the bank's validation and test splits are
drawn by video, so it needs four), which the shared web fixture does not have."""
from __future__ import annotations

from datetime import UTC, datetime

import pytest
from fixtures_model import make_puzzles
from fixtures_web import PASSWORDS, Server, free_port, shot
from testkit.web import pick

pytestmark = [pytest.mark.browser, pytest.mark.slow]
RUN, SET = "bank-run", "bank-set"
VIDEOS = {"bikes": (4.0, 9.5), "trailer_bbb": (1.0, 24.0), "bigbuckbunny": (4.0, 4.9), "carphone_pristine": (5.0, 3.9)}


@pytest.fixture(scope="module")
def bank_app(tmp_path_factory, sample_videos, tiny_model_dir):
    """(url, data dir): 2 puzzles from each of 4 real videos in one curated set (train split), a run of
    the tiny model whose stored answers get half of each video's puzzles right, a researcher."""
    from db.engine import open_db
    from db.models.runs import Rollout, Run
    from db.puzzles.rows import add_puzzle, add_video
    from db.sets.curated import store_set
    from db.users.accounts import add_user
    from mvp_core.puzzle import canonical_json
    from mvp_core.reward import score_completion
    base = tmp_path_factory.mktemp("steer_jobs")
    data = base / "data"
    data.mkdir()
    recs = []
    for i, (name, (fps, max_s)) in enumerate(VIDEOS.items()):
        recs += make_puzzles(sample_videos[name], data, fps=fps, max_s=max_s, k=2, seed=20 + i)
    db_url = f"sqlite:///{data / 'mvp.sqlite'}"
    Session = open_db(db_url, data)
    with Session() as s:
        add_user(s, "rhea", "researcher", PASSWORDS["rhea"])
        for r in recs:
            if r["video"]["id"] not in {x["video"]["id"] for x in recs[:recs.index(r)]}:
                add_video(s, r["video"])
            add_puzzle(s, r, "test")
        store_set(s, SET, [canonical_json({**r, "split": "train"}) for r in recs], 0, 0, {})
        s.add(Run(id=RUN, name=RUN, kind="rollout", model_path=str(tiny_model_dir), config={}, status="done",
                  created_at=datetime(2000, 1, 1, tzinfo=UTC)))
        s.flush()
        for j, r in enumerate(recs):         # every other puzzle of each video answered right
            labels = [o["label"] for o in r["options"]]
            ans = r["answer"] if j % 2 == 0 else list(reversed(r["answer"]))
            text = f"<think>x</think><answer>{', '.join(ans)}</answer>"
            t = score_completion(text, r["answer"], labels)
            s.add(Rollout(run_id=RUN, checkpoint_id=None, puzzle_id=r["id"], sample_index=0, completion=text,
                          chosen_labels=t.labels, format=t.format, selection=t.selection, order=t.order,
                          exact=t.exact, total=t.total, advantage=None))
        s.commit()
    srv = Server(data, db_url, free_port(), base / "serve.log").start()
    yield srv.url, data, recs
    srv.stop()


def open_bank_panel(page) -> None:
    """Open the bank panel once the page's load has filled it, unless that load opened it already (a
    bank job, running or ended, re-attaches open after a reload)."""
    from playwright.sync_api import TimeoutError as PlaywrightTimeout
    name = page.locator("#ro-bank-name")
    for _ in range(3):          # the load may open it between a look and a click, which folds it again
        try:
            name.wait_for(state="visible", timeout=5000)
            return
        except PlaywrightTimeout:
            page.get_by_text("Train a steering bank (background job)").click()
    name.wait_for(state="visible", timeout=30000)


def _open_rollouts(open_as, url):
    page = open_as(url, "rhea", "/rollouts/")
    page.wait_for_selector("#ro-left .mvp-rollouts", timeout=60000)      # the run's answers: the page is up
    return page


def test_bank_job_from_the_page_then_applied_to_its_model(open_as, bank_app):
    url, data, recs = bank_app
    page = _open_rollouts(open_as, url)
    open_bank_panel(page)
    page.wait_for_function("document.querySelector('#ro-bank-split input')?.value === 'train'", timeout=30000)
    pick(page, "ro-bank-labels", "answers stored for this checkpoint")
    page.fill("#ro-bank-name input, #ro-bank-name textarea", "web-bank")
    page.fill("#ro-bank-epochs input", "5")
    page.fill("#ro-bank-hidden input, #ro-bank-hidden textarea", "32")
    page.click("#ro-bank-launch")
    page.wait_for_selector("#ro-bank-msg:has-text('training bank web-bank')", timeout=30000)
    page.wait_for_selector("#ro-bank-job[data-state]", timeout=30000)        # the job, with its progress bar
    page.wait_for_selector("#ro-bank-job[data-state='done'] #ro-bank-summary", timeout=300000)
    job = page.locator("#ro-bank-job")
    assert "train energies" in job.inner_text()                            # the last phase it reported
    assert int(job.get_attribute("data-done")) == int(job.get_attribute("data-total")) > 0
    rows = page.locator("#ro-bank-summary tr")
    assert rows.count() == 3                                                 # header + the tiny model's 2 layers
    for i in (1, 2):
        cells = [float(rows.nth(i).locator("td").nth(c).inner_text()) for c in (2, 3)]   # val bal. acc., AUROC
        assert all(0.0 <= v <= 1.0 for v in cells)
    listed = page.locator("#ro-bank-list tr[data-bank='web-bank.pt']")
    assert f"run {RUN}" in listed.locator(".mvp-bank-model").inner_text()   # the model it was trained on
    shot(page, "rollouts_steer_bank_job")
    # the bank file: the model's fingerprint and where it came from
    from mvp_core.steer.bank import EnergyBank
    bank = EnergyBank.load(data / "steer" / "web-bank.pt")
    assert bank.extra["run"] == RUN and bank.extra["split"] == "train" and bank.fingerprint
    assert (data / "steer" / "states" / "web-bank.pt").is_file()
    # a reload re-attaches: the panel opens by itself with the finished job and its table drawn
    page.reload()
    page.wait_for_selector("#ro-left .mvp-rollouts", timeout=60000)
    page.wait_for_selector("#ro-bank-job[data-state='done'] #ro-bank-summary", state="visible", timeout=30000)
    # applied in the comparison panel to the model it was trained on: both answers appear
    page.get_by_text("Energy steering: steered vs unsteered answer").click()
    pick(page, "ro-steer-bank", "web-bank.pt")
    page.click("#ro-steer-go")
    page.wait_for_selector("#ro-steer-out .mvp-steer", timeout=180000)
    assert page.locator("#ro-steer-out .mvp-steer-answer").count() == 2
    # the same name again is refused with one line, nothing started
    page.fill("#ro-bank-name input, #ro-bank-name textarea", "web-bank")
    page.click("#ro-bank-launch")
    page.wait_for_selector("#ro-bank-msg:has-text('a bank named web-bank exists already')", timeout=30000)


def _foreign_bank(data, tiny_policy, name: str) -> None:
    """A bank of the tiny model's shape whose fingerprint is another model's (its weights differ)."""
    import torch

    from mvp_core.steer.bank import EnergyBank
    from mvp_core.steer.config import EnergyConfig, SplitMetrics, SteerConfig
    from mvp_core.steer.energy import EnergyMLP
    from mvp_core.steer.fingerprint import model_fingerprint
    torch.manual_seed(1)
    ecfg = EnergyConfig(hidden=[32])
    m = {"best_epoch": 0, "threshold": 0.0, "val_bal_acc": 0.5, "val_auroc": 0.5, "test_bal_acc": 0.5,
         "test_auroc": 0.5, "val_acc": 0.5, "test_acc": 0.5, "val_acc_e0": 0.5, "n_train": 0, "n_val": 0, "n_test": 0}
    EnergyBank(models={i: EnergyMLP(128, ecfg.hidden) for i in range(2)}, model_name="/models/another-model",
               hidden_size=128, num_layers=2, energy_config=ecfg,
               metrics={i: SplitMetrics(layer=i, **m) for i in range(2)},
               fingerprint={**model_fingerprint(tiny_policy[0]), "weights": "0123456789abcdef"},
               steer_config=SteerConfig(eta=0.5, steps=3, top_k=2)).save(data / "steer" / name)


def test_bank_of_another_model_is_refused_unless_overridden(open_as, bank_app, tiny_policy):
    url, data, _ = bank_app
    (data / "steer").mkdir(exist_ok=True)
    _foreign_bank(data, tiny_policy, "foreign-bank.pt")
    page = _open_rollouts(open_as, url)
    open_bank_panel(page)
    listed = page.locator("#ro-bank-list tr[data-bank='foreign-bank.pt'] .mvp-bank-model")
    listed.wait_for(timeout=30000)
    assert listed.inner_text().strip() == "another-model"
    # a bank name that is a path, or hidden sizes that are not numbers: one line each, nothing started
    for name, hidden, words in (("../evil", "32", "bank name must be"), ("ok-name", "32,x", "bad energy settings")):
        page.fill("#ro-bank-name input, #ro-bank-name textarea", name)
        page.fill("#ro-bank-hidden input, #ro-bank-hidden textarea", hidden)
        page.click("#ro-bank-launch")
        page.wait_for_selector(f"#ro-bank-msg:has-text('{words}')", timeout=30000)
    assert not (data / "evil.pt").exists() and not (data / "steer" / "ok-name.pt").exists()
    page.get_by_text("Energy steering: steered vs unsteered answer").click()
    pick(page, "ro-steer-bank", "foreign-bank.pt · trained on another-model")
    page.click("#ro-steer-go")
    toast = page.locator(".toast-body", has_text="energy bank refused")
    toast.first.wait_for(timeout=120000)
    text = toast.first.inner_text()
    assert "trained on /models/another-model (weights differ)" in text and "Traceback" not in text
    assert page.locator("#ro-steer-out .mvp-steer").count() == 0            # nothing answered
    page.locator("#ro-steer-force input").check()
    page.click("#ro-steer-go")
    page.wait_for_selector("#ro-steer-out .mvp-steer", timeout=180000)
    assert page.locator("#ro-steer-out .mvp-steer-answer").count() == 2
    shot(page, "rollouts_steer_bank_override")


def test_failed_bank_job_shows_its_one_line_at_phone_width(open_as, bank_app):
    """Labels from the tiny random model's own greedy answers: none is right, so the energies cannot be
    trained; the job ends failed and the page shows the CLI's one line (at 390 px, on a phone)."""
    url, data, _ = bank_app
    page = _open_rollouts(open_as, url)
    page.set_viewport_size({"width": 390, "height": 844})
    open_bank_panel(page)
    page.wait_for_function("document.querySelector('#ro-bank-split input')?.value === 'train'", timeout=30000)
    page.fill("#ro-bank-name input, #ro-bank-name textarea", "greedy-bank")
    page.fill("#ro-bank-epochs input", "2")
    page.fill("#ro-bank-hidden input, #ro-bank-hidden textarea", "16")
    page.fill("#ro-bank-limit input", "4")
    page.click("#ro-bank-launch")
    page.wait_for_selector("#ro-bank-job[data-state='failed'] #ro-bank-error", timeout=300000)
    err = page.locator("#ro-bank-error").inner_text()
    assert "error: the train split needs good and bad states" in err and "Traceback" not in err, err
    assert not (data / "steer" / "greedy-bank.pt").exists()                 # no bank half-written
    shot(page, "rollouts_steer_bank_failed_phone")


def _verdicts(data, recs, reject_odd: bool) -> None:
    """A curator accepts every puzzle (as a frozen set's are), or accepts the first and rejects the
    second puzzle of each video."""
    from db.engine import open_db
    from db.review.verdicts import submit_verdict
    from db.users.accounts import add_user, get_user
    Session = open_db(f"sqlite:///{data / 'mvp.sqlite'}", data)
    with Session() as s:
        user = get_user(s, "cleo") or add_user(s, "cleo", "curator", "cleo-password-1")[0]
        s.commit()
        for j, r in enumerate(recs):
            submit_verdict(s, user.id, r["id"], "reject" if reject_odd and j % 2 else "accept", seconds=1.0)
        s.commit()


@pytest.mark.parametrize("width", [1280, 390])
def test_bank_labels_are_counted_before_the_launch(open_as, bank_app, width):
    """The form says how many good and bad puzzles the label choice gives before anything starts;
    curator verdicts come from the review store (accepted and rejected puzzles, not the frozen set's
    accepted ones only); a choice that cannot give both kinds to each split is refused with that line
    (no advice naming settings the form lacks), and one that can is built."""
    url, data, recs = bank_app
    _verdicts(data, recs, reject_odd=False)
    page = _open_rollouts(open_as, url)
    page.set_viewport_size({"width": width, "height": 900 if width > 400 else 844})
    open_bank_panel(page)
    page.wait_for_function("document.querySelector('#ro-bank-split input')?.value === 'train'", timeout=30000)
    pick(page, "ro-bank-labels", "answers stored for this checkpoint")
    plan = page.locator("#ro-bank-plan[data-ok='1']")
    plan.wait_for(timeout=30000)
    assert plan.get_attribute("data-good") == "4" and plan.get_attribute("data-bad") == "4"
    assert "4 good (right) and 4 bad (wrong) puzzles from 4 videos" in plan.inner_text()
    pick(page, "ro-bank-labels", "curator verdicts")
    plan = page.locator("#ro-bank-plan[data-ok='0']", has_text="(accepted)")
    plan.wait_for(timeout=30000)
    assert "8 good (accepted) and 0 bad (rejected)" in plan.inner_text() and "not enough" in plan.inner_text()
    page.fill("#ro-bank-name input, #ro-bank-name textarea", f"verdict-bank-{width}")
    page.click("#ro-bank-launch")
    page.wait_for_selector("#ro-bank-msg:has-text('not enough for a bank')", timeout=30000)
    msg = page.inner_text("#ro-bank-msg")
    assert "val_frac" not in msg and "\n" not in msg.strip()
    assert not (data / "steer" / f"verdict-bank-{width}.pt").exists()
    _verdicts(data, recs, reject_odd=True)                     # the curator rejects half of them
    pick(page, "ro-bank-labels", "answers stored")                # counted again on each choice
    page.locator("#ro-bank-plan[data-ok='1']").wait_for(timeout=30000)
    pick(page, "ro-bank-labels", "curator verdicts")
    plan = page.locator("#ro-bank-plan[data-ok='1']", has_text="(accepted)")
    plan.wait_for(timeout=30000)
    assert "4 good (accepted) and 4 bad (rejected) puzzles from 4 videos" in plan.inner_text()
    shot(page, f"rollouts_steer_bank_counts_{width}")
    if width == 390:
        return                                                   # built once (the 1280 run): the counts are the point here
    page.fill("#ro-bank-epochs input", "3")
    page.fill("#ro-bank-hidden input, #ro-bank-hidden textarea", "16")
    page.click("#ro-bank-launch")
    page.wait_for_selector("#ro-bank-msg:has-text('training bank verdict-bank-1280')", timeout=30000)
    page.wait_for_selector("#ro-bank-job[data-state='done'] #ro-bank-summary", timeout=300000)
    from mvp_core.steer.bank import EnergyBank
    assert EnergyBank.load(data / "steer" / "verdict-bank-1280.pt").extra["labels_from"] == "verdicts"


def test_a_pick_refills_what_follows_it_and_counts_again(open_as, bank_app):
    """The form's pickers answer a person's pick (the page's load fills them in its own answer, so they
    listen on `.input`: docs/web.md, "Pickers a load fills"): a split changed by hand is counted at once,
    and picking the set again puts its train split back and counts that."""
    url, _, _ = bank_app
    page = _open_rollouts(open_as, url)
    open_bank_panel(page)
    page.wait_for_function("document.querySelector('#ro-bank-split input')?.value === 'train'", timeout=30000)
    plan = page.locator("#ro-bank-plan")
    plan.filter(has_text=f"set {SET}/train").wait_for(timeout=30000)       # counted in the load's answer
    pick(page, "ro-bank-split", "whole set")
    page.locator("#ro-bank-plan", has_text=f"set {SET} (at the launch)").wait_for(timeout=30000)
    pick(page, "ro-bank-set", SET)
    page.wait_for_function("document.querySelector('#ro-bank-split input')?.value === 'train'", timeout=30000)
    page.locator("#ro-bank-plan", has_text=f"set {SET}/train").wait_for(timeout=30000)
    pick(page, "ro-bank-run", RUN)
    assert page.input_value("#ro-bank-ckpt input")                        # the run's newest model version

"""Rollouts names each model version by what it is, on a GRPO run warm-started
from an SFT checkpoint (fixtures_web_named_runs): the trained checkpoint is "b-grpo · step 60 · GRPO
from warm start SFT run a-sft step 2", never "base model"; "Compare with" opens on the model the run
started from (its answers stored under the SFT run); the Job choice survives a reload; a finished eval
appears below without a reload; a split the run trained on is marked and refused unless asked for."""
from __future__ import annotations

import pytest
from fixtures_web import shot
from fixtures_web_named_runs import GRPO, SFT, SPLIT_SET
from testkit.web import pick

pytestmark = [pytest.mark.browser]

GRPO_LABEL = f"{GRPO} · step 60 · GRPO from warm start SFT run {SFT} step 2"
SFT_LABEL = f"{SFT} · step 2 · SFT from model tiny-model"


def test_versions_are_named_by_what_they_are(named_studio):
    from db.runs import rollout_views as rd
    from db.runs.index import checkpoint_choices
    with named_studio.Session() as s:
        labels = dict((k, lab) for lab, k in rd.sources(s))
        keys = list(labels)
        grpo = next(k for k in keys if k.startswith(f"{GRPO}|"))
        assert labels[grpo].startswith(GRPO_LABEL), labels[grpo]
        sft = rd.start_source(s, grpo, keys)
        assert sft is not None and labels[sft].startswith(SFT_LABEL), labels
        assert rd.source_label(s, grpo) == GRPO_LABEL
        assert not any("base model" in lab for lab in labels.values())
        assert checkpoint_choices(s, GRPO)[0] == (f"start: warm start SFT run {SFT} step 2", "base")


@pytest.mark.parametrize("width", [1280, 390])
def test_rollouts_open_on_the_checkpoint_beside_its_start_model(named_studio, open_as, width):
    page = open_as(named_studio.url, "rhea", "/rollouts/")
    page.set_viewport_size({"width": width, "height": 900})
    page.wait_for_selector("#ro-right .mvp-answer-row", timeout=60000)       # the panes (the script)
    page.wait_for_function("document.querySelector('#ro-ckpt2 input')?.value", timeout=60000)   # the pickers
    assert GRPO_LABEL in page.input_value("#ro-ckpt input")
    assert SFT_LABEL in page.input_value("#ro-ckpt2 input")          # not "(none)"
    assert GRPO_LABEL in page.inner_text("#ro-left h4")
    assert SFT_LABEL in page.inner_text("#ro-right h4")
    assert f"started from warm start SFT run {SFT} step 2" in page.inner_text("#ro-pane-info")
    assert "base model" not in page.inner_text("body")
    # the reward terms fit their column (they ran over the total column at 1280 px)
    over = page.eval_on_selector_all("#ro-pane-left .mvp-terms, #ro-pane-right .mvp-terms",
                                     "els => els.filter(e => e.scrollWidth > e.clientWidth + 1).length")
    assert over == 0, over
    shot(page, f"rollouts-names-{width}")


def test_job_choice_survives_a_reload(named_studio, open_as):
    page = open_as(named_studio.url, "rhea", "/rollouts/")
    page.wait_for_selector("#ro-job-launch", timeout=60000)
    page.locator("#ro-job-kind label", has_text="eval:").click()
    page.wait_for_function("location.search.includes('job=eval')", timeout=10000)
    page.reload()
    page.wait_for_selector("#ro-job-launch", timeout=60000)
    page.wait_for_function("document.querySelector('#ro-job-kind input[type=radio]:checked')?.value === 'eval'",
                           timeout=30000)


def test_trained_split_is_marked_and_a_finished_eval_appears_in_place(named_studio, open_as):
    from db.runs.evaluations import list_evaluations
    with named_studio.Session() as s:
        before = len(list_evaluations(s))
    page = open_as(named_studio.url, "rhea", "/rollouts/?job=eval")
    page.wait_for_selector("#ro-job-launch", timeout=60000)
    pick(page, "ro-job-run", GRPO)
    pick(page, "ro-job-ckpt", "step 60")
    pick(page, "ro-job-set", SPLIT_SET)
    page.wait_for_function("document.querySelector('#ro-job-split input')?.value === 'test'", timeout=30000)
    # the split it trained on is marked, and launching there needs the explicit tick
    pick(page, "ro-job-split", "train · trained on")
    page.locator("#ro-job-limit input").fill("2")
    page.locator("#ro-job-mnt input").fill("4")
    page.click("#ro-job-launch")
    page.wait_for_selector("#ro-job-msg:has-text('trained on split train')", timeout=30000)
    assert page.locator("#ro-jobs .mvp-job[data-kind=eval]").get_attribute("data-state") == "none"
    # a held-out split: the eval runs, and its row appears below without a reload
    pick(page, "ro-job-split", "test")
    n_rows = page.locator("#eval-results tr[data-eval]").count()
    assert n_rows == before
    page.click("#ro-job-launch")
    page.wait_for_selector("#ro-jobs .mvp-job[data-kind=eval][data-state=done]", timeout=240000)
    page.wait_for_selector(f"#eval-results tr[data-eval][data-run='{GRPO}']", timeout=30000)
    assert page.locator("#eval-results tr[data-eval]").count() == before + 1
    shot(page, "rollouts-eval-in-place")


@pytest.fixture
def answered_with_checkpoints(named_studio):
    """Two runs that only answered (as the demo's): one with the GRPO checkpoint, one with the SFT
    checkpoint it started from; older than the GRPO run (the page still opens on it); removed after."""
    from datetime import datetime, timezone

    from sqlalchemy import delete, select

    from db.models import Puzzle
    from db.models.runs import Checkpoint, Rollout, Run
    runs = {"c-answers-grpo": (GRPO, 60), "c-answers-sft": (SFT, 2)}
    with named_studio.Session() as s:
        pids = s.scalars(select(Puzzle.id).order_by(Puzzle.id)).all()
        for i, (rid, (of, step)) in enumerate(runs.items()):
            path = s.scalar(select(Checkpoint.path).where(Checkpoint.run_id == of, Checkpoint.step == step))
            s.add(Run(id=rid, name=rid, kind="rollout", model_path=path, config={}, status="done",
                      created_at=datetime(2030, 1, 1 + i, tzinfo=timezone.utc)))
            s.flush()
            s.add_all(Rollout(run_id=rid, checkpoint_id=None, puzzle_id=p, sample_index=0, completion="x",
                              chosen_labels=[], format=0.0, selection=0.0, order=0.0, exact=0.0, total=0.0)
                      for p in pids)
        s.commit()
    yield list(runs)
    with named_studio.Session() as s:
        s.execute(delete(Rollout).where(Rollout.run_id.in_(list(runs))))
        s.execute(delete(Run).where(Run.id.in_(list(runs))))
        s.commit()


GRPO_ANSWERS = f"c-answers-grpo · model: GRPO run {GRPO} step 60"


def test_a_run_that_answered_is_named_by_its_model(named_studio, answered_with_checkpoints):
    """A rollout of the GRPO checkpoint is "RUN · model: GRPO run R step 60", never "start: warm start
    ..." (which read as the warm start) nor "· base" (Stats baselines); compared by default with the
    answers of the model its checkpoint's run started from."""
    from sqlalchemy import select

    from db.models import Puzzle
    from db.runs import rollout_views as rd
    from db.runs.baselines import _model_rows
    from db.runs.index import checkpoint_choices
    with named_studio.Session() as s:
        labels = dict((k, lab) for lab, k in rd.sources(s))
        mine = "c-answers-grpo|base"
        assert labels[mine].startswith(GRPO_ANSWERS), labels[mine]
        assert labels["c-answers-sft|base"].startswith(f"c-answers-sft · model: SFT run {SFT} step 2")
        assert checkpoint_choices(s, "c-answers-grpo")[0] == (f"model: GRPO run {GRPO} step 60", "base")
        assert labels[rd.start_source(s, mine, list(labels))].startswith(SFT_LABEL)
        video_of = dict(s.execute(select(Puzzle.id, Puzzle.video_id)).all())
        rows = [r["solver"] for r in _model_rows(s, list(video_of), video_of)]
        assert GRPO_ANSWERS in rows and not any(r.endswith("· base") for r in rows), rows


@pytest.mark.parametrize("width", [1280, 390])
def test_compare_opens_on_the_start_model_of_a_run_that_answered(named_studio, answered_with_checkpoints, open_as,
                                                                width):
    page = open_as(named_studio.url, "rhea", "/rollouts/")
    page.set_viewport_size({"width": width, "height": 900})
    page.wait_for_function("document.querySelector('#ro-ckpt2 input')?.value", timeout=60000)
    pick(page, "ro-ckpt", GRPO_ANSWERS)
    page.wait_for_function("t => document.querySelector('#ro-left h4')?.innerText.includes(t)",
                           arg=GRPO_ANSWERS, timeout=60000)
    page.wait_for_function("t => document.querySelector('#ro-ckpt2 input')?.value.includes(t)", arg=SFT_LABEL,
                           timeout=60000)
    assert SFT_LABEL in page.inner_text("#ro-right h4")
    assert "warm start GRPO" not in page.inner_text("#ro-left h4")
    shot(page, f"rollouts-answered-with-{width}")

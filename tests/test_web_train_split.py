"""The Train page's splits and learning-signal warnings, in Chromium on the
studio of fixtures_web_named_runs: the page shows and sets the split a run trains on (train by
default) and the one it is evaluated on (val); evaluating on a split it trains on is marked and
refused unless ticked; a launched run snapshots only its training splits and evaluates on the chosen
one; a run whose metrics log shows reward std 0 and grad norm 0 for 7 steps is flagged in the page."""
from __future__ import annotations

import json
import time
from pathlib import Path

import pytest
import yaml
from fixtures_web import shot
from fixtures_web_named_runs import GRPO, NO_SIGNAL_STEPS, SFT, SPLIT_SET
from testkit.web import pick

pytestmark = [pytest.mark.browser]


def test_split_rule_and_note():
    from app.web.pages.train import splits
    from mvp_core.errors import UserError
    counts = {"train": 3, "val": 2, "test": 1}
    with pytest.raises(UserError, match="which it trains on"):
        splits.check(list(counts), ["train"], "train", allow=False)
    with pytest.raises(UserError, match="at least one split"):
        splits.check(list(counts), [], "val", allow=False)
    splits.check(list(counts), ["train"], "train", allow=True)       # asked for explicitly
    splits.check([], [], "", allow=False)                             # a set frozen without splits
    assert 'data-overlap="1"' in splits.note_html(counts, ["train", "val"], "val")
    note = splits.note_html(counts, ["train"], "val")
    assert 'data-overlap="0"' in note and "Trains on train (3)" in note and "untouched: test (1)" in note
    assert splits.default_eval(list(counts)) == "val" and splits.default_eval(["train", "test"]) == "test"


def test_no_signal_warnings_from_the_metrics_log():
    from app.web.pages.train.signals import STREAK, warnings
    flat = [{"step": s, "reward_std": 0.0, "grad_norm": 0.0} for s in range(1, STREAK + 1)]
    assert [k for k, _ in warnings(flat)] == ["no-variance", "zero-grad"]
    assert warnings(flat[:-1]) == []                                          # one step short of the streak
    broken = flat[:3] + [{"step": 9, "reward_std": 0.2, "grad_norm": 0.5}] + flat[:3]
    assert warnings(broken) == []                                             # never STREAK in a row
    assert warnings([{"step": s, "reward_std": 0.1, "grad_norm": -1.0} for s in range(9)]) == []


def _note(page, attr: str) -> str:
    return page.locator("#train-split-note").get_attribute(attr)


@pytest.mark.parametrize("width", [1280, 390])
def test_no_signal_run_is_flagged_in_the_page(named_studio, open_as, width):
    page = open_as(named_studio.url, "rhea", "/train/")
    page.set_viewport_size({"width": width, "height": 900})
    row = f"#train-runs-table tr[data-run='{GRPO}']"
    page.wait_for_selector(row, timeout=60000)
    assert page.locator(f"{row} [data-signal=no-variance]").count() == 1
    assert page.locator(f"{row} [data-signal=zero-grad]").count() == 1
    n = len(NO_SIGNAL_STEPS)
    assert f"{n} consecutive steps" in page.locator(f"{row} [data-signal=no-variance]").get_attribute("title")
    assert page.locator(f"#train-runs-table tr[data-run='{SFT}'] [data-signal]").count() == 0
    assert f"warm start SFT run {SFT} step 2" in page.inner_text(row)
    shot(page, f"train-no-signal-{width}")


def test_train_page_shows_sets_and_enforces_the_splits(named_studio, open_as):
    from app.web import jobs
    before = set((named_studio.data_dir / "runs").glob("*-grpo-*"))
    page = open_as(named_studio.url, "rhea", "/train/")
    try:
        page.wait_for_selector("#train-split-note", timeout=60000)
        page.wait_for_function("document.querySelector('#train-set input')?.value", timeout=30000)
        if SPLIT_SET not in page.input_value("#train-set input"):
            pick(page, "train-set", SPLIT_SET)
        page.wait_for_function("document.querySelector('#train-split-note')?.dataset.eval === 'val'", timeout=30000)
        assert _note(page, "data-splits") == "train" and _note(page, "data-overlap") == "0"
        assert page.locator("#train-splits input[type=checkbox]:checked").count() == 1
        # evaluating on the split it trains on: marked, and refused without the explicit tick
        pick(page, "train-eval-split", "train")
        page.wait_for_function("document.querySelector('#train-split-note')?.dataset.overlap === '1'", timeout=30000)
        assert "measures memory" in page.inner_text("#train-split-note")
        pick(page, "train-model", "tiny-model (local model)")
        page.locator("#train-max-steps input").fill("1")
        page.locator("#train-save-steps input").fill("1")
        page.click("#train-launch")
        page.wait_for_selector("#train-msg:has-text('which it trains on')", timeout=30000)
        assert set((named_studio.data_dir / "runs").glob("*-grpo-*")) == before   # nothing launched
        shot(page, "train-split-overlap")
        # held out again (val): the run starts, reading train only and evaluating on val
        pick(page, "train-eval-split", "val")
        page.wait_for_function("document.querySelector('#train-split-note')?.dataset.overlap === '0'", timeout=30000)
        page.click("#train-launch")
        page.wait_for_selector("#train-msg:has-text('launched')", timeout=60000)
        run_dir = Path(jobs.active(named_studio.data_dir)["run_dir"])
        cfg = yaml.safe_load((run_dir / "launch.yaml").read_text())
        assert cfg["set_splits"] == ["train"] and cfg["eval_split"] == "val"
        splits = {json.loads(line)["split"] for line in (run_dir / "puzzles.jsonl").read_text().splitlines()}
        assert splits == {"train"}
        held = [json.loads(line)["split"] for line in Path(cfg["eval_puzzles"]).read_text().splitlines()]
        assert "val" in held
        # a reload shows the launched run's splits
        page.reload()
        page.wait_for_function("document.querySelector('#train-split-note')?.dataset.eval === 'val'", timeout=60000)
        assert _note(page, "data-splits") == "train"
    finally:
        jobs.stop(named_studio.data_dir, grace_s=5)
        deadline = time.time() + 30
        while time.time() < deadline and (j := jobs.active(named_studio.data_dir)) and j["alive"]:
            time.sleep(0.2)
        _forget_new_runs(named_studio, before)


def _forget_new_runs(studio, before: set) -> None:
    """The run this test launched leaves the shared studio (its folder and its row), so the other tests
    of the session see the runs the fixture made, in any order."""
    import shutil

    from sqlalchemy import select

    from db.models.runs import Run
    new = {p.name for p in set((studio.data_dir / "runs").glob("*-grpo-*")) - before}
    for name in new:
        shutil.rmtree(studio.data_dir / "runs" / name, ignore_errors=True)
    with studio.Session() as s:
        for r in s.scalars(select(Run)).all():
            if r.dir and Path(r.dir).name in new:
                s.delete(r)
        s.commit()

"""The Rollouts page's energy-steering panel in Chromium: a run of the tiny Qwen2.5-VL, a bank under
DATA/steer/, and the same puzzle answered with and without steering side by side, with rewards and
the energy per steered layer before and after the steps."""
from __future__ import annotations

from datetime import UTC, datetime

import pytest
from fixtures_web import shot
from sqlalchemy import select
from testkit.web import pick

pytestmark = [pytest.mark.browser, pytest.mark.slow]
RUN = "steer-web-run"


@pytest.fixture(scope="module")
def steer_run(web_app, tiny_model_dir, tiny_policy):
    """A run whose model path is the real tiny model (stored oldest, so the page's default run is
    unchanged for the other browser tests), one scored answer, and a bank file for that model."""
    import json

    import torch

    from db.models import Puzzle
    from db.models.runs import Rollout, Run
    from mvp_core.reward import score_completion
    from mvp_core.steer.bank import EnergyBank
    from mvp_core.steer.config import EnergyConfig, SplitMetrics, SteerConfig
    from mvp_core.steer.energy import EnergyMLP
    from mvp_core.steer.fingerprint import model_fingerprint
    with web_app.Session() as s:
        row = s.scalars(select(Puzzle).order_by(Puzzle.id)).first()
        rec = json.loads(row.record_json)
        s.add(Run(id=RUN, name=RUN, kind="rollout", model_path=str(tiny_model_dir), config={}, status="done",
                  created_at=datetime(2000, 1, 1, tzinfo=UTC)))
        s.flush()
        text = f"<think>x</think><answer>{', '.join(rec['answer'])}</answer>"
        t = score_completion(text, rec["answer"], [o["label"] for o in rec["options"]])
        s.add(Rollout(run_id=RUN, checkpoint_id=None, puzzle_id=row.id, sample_index=0, completion=text,
                      chosen_labels=t.labels, format=t.format, selection=t.selection, order=t.order,
                      exact=t.exact, total=t.total, advantage=None))
        s.commit()
    torch.manual_seed(0)
    ecfg = EnergyConfig(hidden=[32])
    bank = EnergyBank(models={i: EnergyMLP(128, ecfg.hidden) for i in range(2)}, model_name="tiny", hidden_size=128,
                      num_layers=2, energy_config=ecfg,
                      metrics={i: SplitMetrics(layer=i, best_epoch=0, threshold=0.0, val_bal_acc=0.5, val_auroc=0.5,
                                               test_bal_acc=0.5, test_auroc=0.5, val_acc=0.5, test_acc=0.5,
                                               val_acc_e0=0.5, n_train=0, n_val=0, n_test=0)
                               for i in range(2)}, fingerprint=model_fingerprint(tiny_policy[0]),
                      steer_config=SteerConfig(eta=0.7, steps=4, top_k=2))
    bank.save(web_app.data_dir / "steer" / "tiny-bank.pt")
    return row.id


def test_rollouts_page_compares_steered_and_unsteered(web_app, open_as, steer_run):
    page = open_as(web_app, "rhea", "/rollouts/")
    page.wait_for_selector(".mvp-answer-row", timeout=30000)
    pick(page, "ro-ckpt", RUN)
    page.wait_for_selector("#ro-left .mvp-rollouts[data-answers='1']", timeout=30000)   # the run's one answer
    page.get_by_text("Energy steering: steered vs unsteered answer").click()
    pick(page, "ro-steer-bank", "tiny-bank.pt")
    # the bank's stored settings fill the form (what `mvp steer generate --bank` starts from too)
    page.wait_for_function("document.querySelector('#ro-steer-eta input')?.value === '0.7'", timeout=30000)
    page.click("#ro-steer-go")
    page.wait_for_selector("#ro-steer-out .mvp-steer", timeout=180000)
    out = page.locator("#ro-steer-out")
    assert out.locator(".mvp-steer-answer").count() == 2
    assert "unsteered" in out.inner_text() and "steered" in out.inner_text()
    rows = out.locator(".mvp-steer-energy tr")
    assert rows.count() == 3                       # header + the tiny model's 2 layers
    before, after = (float(rows.nth(1).locator("td").nth(i).inner_text()) for i in (1, 2))
    assert after < before
    shot(page, "rollouts_steer")
    # the prompt-token-only variant (docs/steer.md) from the same panel: the same prefill steps
    page.evaluate("document.querySelector('#ro-steer-out .mvp-steer').remove()")
    pick(page, "ro-steer-positions", "the prompt's last token only")
    page.click("#ro-steer-go")
    page.wait_for_selector("#ro-steer-out .mvp-steer", timeout=180000)
    assert page.locator("#ro-steer-out .mvp-steer-energy tr").count() == 3
    # explicit layers (what `mvp steer --layers 1` does) win over top-k: one layer steered
    page.evaluate("document.querySelector('#ro-steer-out .mvp-steer').remove()")
    page.fill("#ro-steer-layers textarea, #ro-steer-layers input", "1")
    page.click("#ro-steer-go")
    page.wait_for_selector("#ro-steer-out .mvp-steer", timeout=180000)
    rows = page.locator("#ro-steer-out .mvp-steer-energy tr")
    assert rows.count() == 2 and rows.nth(1).locator("td").first.inner_text().strip() == "1"


@pytest.mark.parametrize("field,value,words", [
    # past Gradio's own checks (an empty number is None; NaN compares false with the widget's bounds):
    # SteerConfig's validation, one line naming the setting (these were a TypeError / a ValidationError)
    ("eta", None, "eta must be a number"), ("eta", float("nan"), "eta must be a finite number"),
    ("top_k", None, "top-k layers is empty; enter a number"),
    # explicit layers: not numbers, or a layer the bank has no energy for (checked before the model loads)
    ("layers", "2;x", "layers must be whole numbers"), ("layers", "7", "no energy model for layer(s) [7]"),
    # refused by Gradio's widget bounds and choices before the handler runs
    ("eta", -1, "less than minimum value"), ("steps", 10 ** 9, "greater than maximum value"),
    ("gate", "evil", "not in the list of choices")])
def test_steer_compare_refuses_bad_settings_over_http(web_app, steer_run, field, value, words):
    """The panel's event called over HTTP as the page calls it, with values its widgets would never
    send: each is refused with one line, before a model is loaded."""
    from fixtures_security import gradio_event, gradio_page_session, http_login
    from fixtures_web import PASSWORDS
    c = http_login(web_app.url, "rhea", PASSWORDS["rhea"])
    session_hash, apis = gradio_page_session(c, "rollouts")
    # pick the run as the page does (Gradio only accepts dropdown values among this session's choices)
    ok, out = gradio_event(c, "rollouts", session_hash, apis["run_videos"], [f"{RUN}|base", None])
    assert ok and out["data"][2]["value"] == steer_run, out
    cfg = c.get("/rollouts/config").json()
    ids = {comp.get("props", {}).get("elem_id"): comp["id"] for comp in cfg["components"]}
    banks = next(d["id"] for d in cfg["dependencies"] if d["outputs"] == [ids["ro-steer-bank"]])
    assert gradio_event(c, "rollouts", session_hash, banks, [])[0]          # the bank list, refreshed
    good = {"eta": 0.5, "steps": 5, "top_k": 3, "layers": "", "gate": "off", "positions": "every"}
    v = {**good, field: value}
    ok, out = gradio_event(c, "rollouts", session_hash, apis["steer_compare"],
                           [f"{RUN}|base", steer_run, "tiny-bank.pt", v["eta"], v["steps"], v["top_k"], v["layers"], v["gate"],
                            v["positions"], False])
    assert not ok, out
    err = out["error"]
    assert words in err and "\n" not in err and "Traceback" not in err, err

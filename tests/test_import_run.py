"""`mvp import-run` (app/cli/import_run.py, mvp_core/runs_import/, db/runs/imported.py): another
engine's run brought back. Real files in each engine's format, made from a real `mvp export` of a
frozen set: verl's validation dump (the lines `RayPPOTrainer._dump_generations` writes: input =
the prompt as verl builds and decodes it with the model's processor, output, gts, score from the
project's compute_score loaded by path as verl's custom_reward_function loader does, step) and
TRL's completions table written by TRL's own GRPOTrainer (log_completions=True) training the tiny
Qwen2.5-VL on the trl export. Imported, the run is on the Rollouts page (Chromium, `mvp serve`) beside a
studio run, each stored reward equals the project's reward of its text, `mvp eval --run` scores its
checkpoint, and bad inputs are one line with nothing stored."""
from __future__ import annotations

import importlib.util
import json
import shutil
from pathlib import Path

import pytest
from fixtures_engines import ENGINE_SET as SET

from app.cli import main

ROOT = Path(__file__).resolve().parents[1]


def _by_path(name: str):
    # as verl's custom_reward_function.path does: load the file by path, take the function
    spec = importlib.util.spec_from_file_location("custom_module", ROOT / "mvp_core" / "export" / name)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def mvp(capsys, *argv):
    rc = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return rc, out, err


@pytest.fixture(scope="module")
def studio(engine_set):
    return engine_set


def _verl_rows(export: Path) -> list[dict]:
    import pyarrow.parquet as pq
    return [r for f in sorted(export.glob("*.parquet")) for r in pq.read_table(f).to_pylist()]


def _decoded_prompt(processor, text: str) -> str:
    """What verl and EasyR1 log as `input`: the row's prompt text, each <image> a vision block
    (their RLHFDataset), through the processor's chat template, tokenized, and decoded with
    skip_special_tokens=True (their trainers' validation)."""
    text = text.replace("<image>", "<|vision_start|><|image_pad|><|vision_end|>")
    prompt = processor.apply_chat_template([{"role": "user", "content": text}], add_generation_prompt=True,
                                           tokenize=False)
    ids = processor.tokenizer(prompt)["input_ids"]
    return processor.tokenizer.decode(ids, skip_special_tokens=True)


def _answers(rec: dict) -> list[str]:
    """Three answers per puzzle: the exact one, a wrong order, and one without the format."""
    a = list(rec["answer"])
    return [f"<think>the motion continues</think><answer>{', '.join(a)}</answer>",
            f"<think>guess</think><answer>{', '.join(reversed(a))}</answer>",
            f"I think {a[0]}"]


def write_verl_dump(out: Path, export: Path, processor, steps, reward_file="reward_fn.py") -> dict:
    """DIR/<step>.jsonl as verl's _dump_generations writes it; extra keys from a dict-valued reward."""
    compute_score = _by_path(reward_file).compute_score
    out.mkdir(parents=True, exist_ok=True)
    rows = _verl_rows(export)
    expect = {}
    for step in steps:
        lines = []
        for row in rows:
            pid = row["extra_info"]["puzzle_id"]
            gt = row["reward_model"]["ground_truth"]
            prompt = _decoded_prompt(processor, row["prompt"][0]["content"])
            for text in _answers(json.loads(gt)):
                got = compute_score(row["data_source"], text, gt, row["extra_info"])
                extra = got if isinstance(got, dict) else {"score": got}
                lines.append({"input": prompt, "output": text, "gts": gt, "score": extra["score"], "step": step,
                              **extra})
                expect.setdefault((step, pid), []).append((text, extra["score"]))
        (out / f"{step}.jsonl").write_text("".join(json.dumps(x, ensure_ascii=False) + "\n" for x in lines))
    return expect


@pytest.fixture(scope="module")
def processor(tiny_model_dir):
    from transformers import AutoProcessor
    return AutoProcessor.from_pretrained(tiny_model_dir)


@pytest.fixture(scope="module")
def verl_checkpoint(studio):
    """verl's layout after the model merger: global_step_2/actor/huggingface (the tiny model's files)."""
    ck = studio["base"] / "verl-ckpt" / "global_step_2" / "actor" / "huggingface"
    shutil.copytree(studio["model"], ck)
    return ck


def _stored(Session, run_id):
    from sqlalchemy import select

    from db.models.runs import Checkpoint, Rollout
    with Session() as s:
        steps = {c.id: c.step for c in s.scalars(select(Checkpoint).where(Checkpoint.run_id == run_id))}
        return [(steps.get(r.checkpoint_id, 0), r.puzzle_id, r.sample_index, r.completion, r.total, r.exact,
                 r.set_name, r.split)
                for r in s.scalars(select(Rollout).where(Rollout.run_id == run_id)
                                   .order_by(Rollout.checkpoint_id, Rollout.puzzle_id, Rollout.sample_index))]


def test_verl_dump_imports_with_the_projects_reward(capsys, studio, processor, verl_checkpoint):
    from mvp_core.reward import score_completion
    dump = studio["base"] / "verl-val"
    expect = write_verl_dump(dump, studio["exports"]["verl"], processor, steps=(0, 2), reward_file="logged_reward.py")
    rc, out, err = mvp(capsys, "import-run", "--engine", "verl", "--generations", dump, "--set", SET,
                       "--checkpoint", verl_checkpoint, "--base-model", studio["model"], "--name", "verl-run",
                       "--db", studio["url"], "--data", studio["data"])
    assert rc == 0, err
    assert "imported run 'verl-run' (verl)" in out and "steps 0, 2" in out and "differently" not in out
    rows = _stored(studio["Session"], "verl-run")
    assert len(rows) == sum(len(v) for v in expect.values())
    recs = studio["records"]
    for step, pid, i, text, total, exact, set_name, split in rows:
        rec = recs[pid]
        assert (text, total) == expect[(step, pid)][i]           # the engine's score, in the engine's order
        want = score_completion(text, rec["answer"], [o["label"] for o in rec["options"]])
        assert total == want.total and exact == want.exact      # the project's reward
        assert set_name == SET and split == rec["split"]
    assert {r[4] for r in rows} >= {1.0} and min(r[4] for r in rows) < 0.2
    # `mvp eval` scores the run's checkpoint (the merged HF folder) and stores it under that step
    rc, out, err = mvp(capsys, "eval", "--run", "verl-run", "--checkpoint", "2", "--set", SET, "--limit", 2,
                       "--max-new-tokens", 4, "--threads", 1, "--db", studio["url"], "--data", studio["data"])
    assert rc == 0, err
    assert "eval stored under run verl-run, step 2" in err
    from db.runs.evaluations import list_evaluations
    with studio["Session"]() as s:
        evs = list_evaluations(s, ["verl-run"])
    assert [(e["step"], e["n_puzzles"]) for e in evs] == [(2, 2)]


def _told_apart(studio) -> set[str]:
    """The set's puzzles that their prompt text and ground truth alone name (mvp_core/runs_import/match.py)."""
    from mvp_core.runs_import.match import Matcher
    m = Matcher(list(studio["records"].values()), SET)
    keys = [(text, json.dumps(gt, sort_keys=True)) for _, text, gt in m.keys]
    unique = {pid for (pid, _, _), k in zip(m.keys, keys) if keys.count(k) == 1}
    assert len(unique) >= 3
    return unique


def test_verl_dump_without_ids_is_placed_by_prompt_and_answer(capsys, studio, processor):
    """The recipe's plain compute_score (reward_fn.py) logs no id: each line is placed by its decoded
    prompt and ground truth, here on the puzzles that pair names alone."""
    unique = _told_apart(studio)
    export = studio["base"] / "verl-unique"
    shutil.copytree(studio["exports"]["verl"], export)
    import pyarrow.parquet as pq
    for f in export.glob("*.parquet"):
        t = pq.read_table(f)
        keep = [r["extra_info"]["puzzle_id"] in unique for r in t.to_pylist()]
        pq.write_table(t.filter(keep), f)
    dump = studio["base"] / "verl-val-plain"
    expect = write_verl_dump(dump, export, processor, steps=(5,))
    assert "puzzle_id" not in (dump / "5.jsonl").read_text()
    rc, out, err = mvp(capsys, "import-run", "--engine", "verl", "--generations", dump / "5.jsonl", "--set", SET,
                       "--name", "verl-plain", "--db", studio["url"], "--data", studio["data"])
    assert rc == 0, err
    rows = _stored(studio["Session"], "verl-plain")
    assert {(r[1], r[2]): (r[3], r[4]) for r in rows} == {(pid, i): v for (_, pid), vs in expect.items()
                                                          for i, v in enumerate(vs)}


def test_easyr1_generations_by_their_logged_fields(capsys, studio, processor):
    """EasyR1's logged validation generation (input, output, label, score) at a step, from its own
    export's rows (problem, answer, images; label: the plain answer text of EasyR1's default
    answer_key): placed by prompt and label, scored by the project. The trained splits may be named
    as the export names them ("validation" is the set's "val")."""
    import pyarrow.parquet as pq

    from mvp_core.reward import score_completion
    unique, recs = _told_apart(studio), studio["records"]
    lines, expect = [], {}
    for f in sorted((studio["exports"]["easyr1"] / "data").glob("*.parquet")):
        for row in pq.read_table(f).to_pylist():
            if row["puzzle_id"] not in unique:
                continue
            rec = recs[row["puzzle_id"]]
            for text in _answers(rec):
                total = score_completion(text, rec["answer"], [o["label"] for o in rec["options"]]).total
                lines.append({"input": _decoded_prompt(processor, row["problem"]), "output": text,
                              "label": row["answer"], "score": total, "step": 7})
                expect.setdefault(rec["id"], []).append((text, total))
    gens = studio["base"] / "easyr1-val.jsonl"
    gens.write_text("".join(json.dumps(x) + "\n" for x in lines))
    rc, out, err = mvp(capsys, "import-run", "--engine", "easyr1", "--generations", gens, "--set", SET,
                       "--name", "easyr1-run", "--trained-split", "train,validation",
                       "--db", studio["url"], "--data", studio["data"])
    assert rc == 0, err
    assert "(easyr1)" in out and "steps 7;" in out
    from db.models.runs import Run
    with studio["Session"]() as s:
        assert s.get(Run, "easyr1-run").config["set_splits"] == ["train", "val"]
    rows = _stored(studio["Session"], "easyr1-run")
    assert {(r[1], r[2]): (r[3], r[4]) for r in rows} == {(pid, i): v for pid, vs in expect.items()
                                                          for i, v in enumerate(vs)}


def test_a_prompt_two_puzzles_share_is_refused(studio):
    """Two puzzles with the same prompt text and answer: a generation without an id is refused (it
    would be a guess), one whose ground truth tells them apart is placed."""
    from mvp_core.errors import UserError
    from mvp_core.export.formats import ground_truth, prompt_and_images
    from mvp_core.runs_import.match import place
    from mvp_core.runs_import.readers import Generation
    rec = next(iter(studio["records"].values()))
    twin = json.loads(json.dumps(rec)) | {"id": "twin-of-" + rec["id"]}
    text = prompt_and_images(rec)[0].replace("<image>", "<|image_pad|>")
    g = Generation("dump.jsonl:1", 3, "<think>x</think><answer>A</answer>", prompt=f"system\n{text}\nassistant\n")
    with pytest.raises(UserError, match="fit 2 puzzles.*not its images.*reward.custom_reward_function.path=.*logged_reward.py"):
        place([g], [rec, twin], SET)
    twin["answer"] = list(reversed(twin["answer"]))
    g.ground_truth = ground_truth(twin)
    (p,) = place([g], [rec, twin], SET)
    assert p.puzzle_id == twin["id"] and p.step == 3


@pytest.mark.slow
def test_trl_completions_from_trls_own_trainer(capsys, studio, tmp_path):
    """TRL's GRPOTrainer trains one step on the trl export and logs its completions table; the
    import puts each row on its puzzle (the id logged_reward.mvp_reward logged), with TRL's
    advantage and the project's reward, and its checkpoint-1 as step 1."""
    import subprocess
    import sys

    import pyarrow.parquet as pq

    from mvp_core.reward import score_completion
    out = tmp_path / "trl-out"
    res = subprocess.run([sys.executable, str(ROOT / "tests" / "trl_grpo_run.py"), str(studio["model"]), str(out)],
                         cwd=studio["exports"]["trl"], capture_output=True, text=True, timeout=600)
    assert res.returncode == 0, res.stderr[-3000:]
    (table,) = sorted((out / "completions").glob("completions_*.parquet"))
    logged = pq.read_table(table).to_pylist()
    assert {"step", "prompt", "completion", "mvp_reward", "puzzle_id", "advantage"} <= set(logged[0])
    rc, o, err = mvp(capsys, "import-run", "--engine", "trl", "--generations", out, "--set", SET,
                     "--checkpoint", out / "checkpoint-1", "--base-model", studio["model"], "--name", "trl-run",
                     "--db", studio["url"], "--data", studio["data"])
    assert rc == 0, err
    assert "steps 1;" in o and "step 1 " in o and "differently" not in o
    from sqlalchemy import select

    from db.models.runs import Checkpoint, Rollout, Run
    with studio["Session"]() as s:
        run = s.get(Run, "trl-run")
        assert run.kind == "trl" and run.config["set_splits"] == ["train"]
        (ck,) = s.scalars(select(Checkpoint).where(Checkpoint.run_id == "trl-run"))
        assert ck.step == 1 and ck.path == str((out / "checkpoint-1").resolve())
        rows = s.scalars(select(Rollout).where(Rollout.run_id == "trl-run").order_by(Rollout.id)).all()
    assert [(r.puzzle_id, r.completion, r.total, r.advantage) for r in rows] == [
        (x["puzzle_id"], x["completion"][-1]["content"], x["mvp_reward"], x["advantage"]) for x in logged]
    recs = studio["records"]
    for r in rows:
        want = score_completion(r.completion, recs[r.puzzle_id]["answer"],
                                [o["label"] for o in recs[r.puzzle_id]["options"]])
        assert (r.total, r.format, r.exact) == (want.total, want.format, want.exact)


def _runs(Session) -> set[str]:
    from sqlalchemy import select

    from db.models.runs import Run
    with Session() as s:
        return set(s.scalars(select(Run.id)))


def test_bad_inputs_are_one_line_and_store_nothing(capsys, studio, processor, tmp_path):
    dump = tmp_path / "dump"
    write_verl_dump(dump, studio["exports"]["verl"], processor, steps=(1, 2), reward_file="logged_reward.py")
    lines = (dump / "2.jsonl").read_text().splitlines()
    bad = tmp_path / "bad"
    bad.mkdir()
    (bad / "1.jsonl").write_text((dump / "1.jsonl").read_text())        # a good file first: still nothing stored
    (bad / "2.jsonl").write_text("\n".join(lines[:3] + ['{"input": "x", "score": 1, "step": 2}'] + lines[3:]))
    stray = tmp_path / "stray.jsonl"
    stray.write_text(json.dumps(json.loads(lines[0]) | {"puzzle_id": "no-such-puzzle"}) + "\n")
    other = tmp_path / "other-set.jsonl"              # the puzzle's id, another ground truth
    first = json.loads(lines[0])
    gt = json.loads(first["gts"])
    other.write_text(json.dumps(first | {"gts": json.dumps(gt | {"answer": gt["answer"][::-1] + ["Z"]})}) + "\n")
    empty, empty_dir, named = tmp_path / "empty.jsonl", tmp_path / "ckpt-empty", tmp_path / "final"
    empty.write_text("\n")
    empty_dir.mkdir()
    shutil.copytree(studio["model"], named)
    trl_bad = tmp_path / "completions_00001.parquet"
    import pyarrow as pa
    import pyarrow.parquet as pq
    pq.write_table(pa.table({"step": [1], "text": ["x"]}), trl_bad)
    db = ["--db", studio["url"], "--data", studio["data"]]
    before = _runs(studio["Session"])
    cases = [
        (["--generations", tmp_path / "nowhere"], "generations", "does not exist"),
        (["--generations", bad], "verl", "2.jsonl:4: not a verl generation line"),
        (["--generations", stray], "verl", "puzzle 'no-such-puzzle' is not in set 'imp'"),
        (["--generations", other], "verl", "its ground truth is not puzzle"),
        (["--generations", dump, "--checkpoint", empty_dir], "verl", "is not a Hugging Face model folder"),
        (["--generations", dump, "--checkpoint", named], "verl", "give it as STEP=DIR"),
        (["--generations", dump, "--checkpoint", f"2={named}", "--checkpoint", f"2={named}"], "verl",
         "two checkpoints for step 2"),
        (["--generations", trl_bad], "trl", "not a TRL completions table (no column prompt, completion)"),
        (["--generations", empty], "verl", "no generations in it"),
    ]
    for extra, engine, msg in cases:
        engine = "verl" if engine == "generations" else engine
        rc, out, err = mvp(capsys, "import-run", "--engine", engine, "--set", SET, "--name", "bad-run", *extra, *db)
        assert rc == 2 and msg in err and err.count("\n") == 1, (extra, err)
    rc, out, err = mvp(capsys, "import-run", "--engine", "verl", "--set", "nope", "--generations", dump, *db)
    assert rc == 2 and "no curated set named 'nope'" in err
    assert _runs(studio["Session"]) == before
    # the same name twice: the second is refused and the first run is kept whole
    args = ["import-run", "--engine", "verl", "--set", SET, "--generations", dump, "--checkpoint", f"2={named}",
            "--name", "twice", *db]
    assert mvp(capsys, *args)[0] == 0
    n = len(_stored(studio["Session"], "twice"))
    rc, out, err = mvp(capsys, *args)
    assert rc == 2 and "run 'twice' exists already" in err
    assert len(_stored(studio["Session"], "twice")) == n


@pytest.mark.slow
def test_rollouts_page_shows_the_imported_run_beside_a_studio_run(capsys, studio, processor, verl_checkpoint,
                                                                   browser):
    """In the browser, the Rollouts page's version picker lists the imported run's versions beside a
    studio run's (`mvp rollout`); the page's view API shows both groups on one puzzle with the stored
    rewards."""
    import re
    from urllib.parse import quote

    from fixtures_web import Server, free_port, login, shot
    from sqlalchemy import select

    from db.models.runs import Checkpoint
    from db.runs.rollout_views import source_key
    from db.users.accounts import add_user
    db = ["--db", studio["url"], "--data", studio["data"]]
    with studio["Session"]() as s:
        add_user(s, "rhea", "researcher", "rhea-pass-1")
        s.commit()
    rc, out, err = mvp(capsys, "rollout", "--model", studio["model"], "--set", SET, "-G", 2, "--max-new-tokens", 4,
                       "--limit", 1, "--threads", 1, "--name", "studio-run", *db)
    assert rc == 0, err
    dump = studio["base"] / "verl-page"
    expect = write_verl_dump(dump, studio["exports"]["verl"], processor, steps=(0, 4), reward_file="logged_reward.py")
    rc, out, err = mvp(capsys, "import-run", "--engine", "verl", "--generations", dump, "--set", SET,
                       "--checkpoint", f"4={verl_checkpoint}", "--base-model", studio["model"], "--name", "verl-page",
                       *db)
    assert rc == 0, err
    with studio["Session"]() as s:
        ck = s.scalar(select(Checkpoint.id).where(Checkpoint.run_id == "verl-page", Checkpoint.step == 4))
    pid = next(iter(studio["records"]))              # the puzzle `mvp rollout --limit 1` answered
    srv = Server(studio["data"], studio["url"], free_port(), studio["base"] / "serve.log").start()
    try:
        ctx, page = login(browser, srv.url, "rhea", "rhea-pass-1", path="/rollouts/")
        page.wait_for_selector(".mvp-answer-row", timeout=60000)
        page.wait_for_function("document.querySelector('#ro-ckpt input')?.value", timeout=60000)   # the pickers
        page.click("#ro-ckpt input")
        page.wait_for_selector("li[role=option]", timeout=30000)
        listed = page.locator("li[role=option]").all_inner_texts()
        assert any("verl-page · step 4 · verl from model" in x for x in listed), listed
        assert any("verl-page · model:" in x for x in listed) and any("studio-run" in x for x in listed), listed
        left, right = source_key("verl-page", ck), source_key("studio-run", None)
        r = page.request.get(f"{srv.url}/rollouts/api/view?left={quote(left)}&right={quote(right)}&puzzle={pid}")
        assert r.status == 200, r.text()
        html = r.json()["html"]
        totals = [float(t) for t in re.findall(r'class="mvp-answer-row"[^>]*data-total="([0-9.]+)"', html[1])]
        assert totals == pytest.approx([score for _, score in expect[(4, pid)]], abs=1e-6)
        assert html[2].count('class="mvp-answer-row"') == 2          # the studio run's G answers beside it
        # the newest version opens on the left: the imported run's last step, beside its start model
        page.keyboard.press("Escape")
        assert "verl-page · step 4" in page.inner_text("#ro-left h4")
        page.wait_for_selector("#ro-right h4:has-text('verl-page · model:')", timeout=30000)
        shot(page, "rollouts-imported-run")
        ctx.close()
    finally:
        srv.stop()

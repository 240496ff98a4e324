"""From a fresh directory: `mvp tiny-model`, `mvp synth` on a real sample video, `mvp rollout`
(puzzles file and curated set, resumed) and `mvp eval` with the audit's baselines."""
from __future__ import annotations

import json

import pytest

from app.cli import main
from mvp_core.synth.audit import SOLVERS

pytestmark = pytest.mark.usefixtures("torch_one_thread")


def mvp(capsys, *argv) -> tuple[int, str, str]:
    capsys.readouterr()
    rc = main([str(a) for a in argv])
    out = capsys.readouterr()
    return rc, out.out, out.err


@pytest.fixture(scope="module")
def synth_dir(tmp_path_factory, sample_videos):
    data = tmp_path_factory.mktemp("cli_data")
    rc = main(["synth", str(sample_videos["bikes"]), "--data", str(data), "--per-video", "3", "--quiet"])
    assert rc == 0 and (data / "puzzles.jsonl").is_file()
    return data


def test_tiny_model_rollout_eval_end_to_end(capsys, tmp_path, synth_dir):
    model = tmp_path / "tiny"
    rc, out, _ = mvp(capsys, "tiny-model", model)
    assert rc == 0 and (model / "config.json").is_file() and (model / "model.safetensors").is_file()
    n = len((synth_dir / "puzzles.jsonl").read_text().splitlines())
    assert n >= 2
    pq_out = tmp_path / "answers.parquet"
    args = ["rollout", "--model", model, "--puzzles", synth_dir / "puzzles.jsonl", "--data", synth_dir,
            "-G", 3, "--max-new-tokens", 10, "--batch-puzzles", 2, "--out", pq_out, "--threads", 1]
    rc, out, _ = mvp(capsys, *args, "--limit", 1)
    assert rc == 0 and f"3 new answers, 3 stored for 1 puzzles in {pq_out}" in out
    assert "answers/s" in out
    rc, out, _ = mvp(capsys, *args)                               # resumes: only the other puzzles
    assert rc == 0 and f"{3 * (n - 1)} new answers, {3 * n} stored for {n} puzzles" in out
    rc, out, _ = mvp(capsys, *args)
    assert rc == 0 and out.startswith("0 new answers")

    import pyarrow.parquet as pq
    t = pq.read_table(pq_out).to_pylist()
    assert len(t) == 3 * n and all(0 <= r["total"] <= 1 for r in t)
    from sqlalchemy import func, select

    from db.engine import open_db
    from db.models.runs import Rollout, Run
    Session = open_db(None, synth_dir)
    with Session() as s:
        assert s.get(Run, "rollout-tiny").status == "done"
        assert s.scalar(select(func.count()).select_from(Rollout).where(Rollout.run_id == "rollout-tiny")) == 3 * n

    # a curated set of the synthesized puzzles, run by name
    from db.sets.curated import store_set
    lines = (synth_dir / "puzzles.jsonl").read_text().splitlines()
    with Session() as s:
        store_set(s, "cli-set", lines, 0, 2, {})
        s.commit()
    rc, out, _ = mvp(capsys, "rollout", "--model", model, "--set", "cli-set", "--data", synth_dir, "-G", 2,
                     "--max-new-tokens", 8, "--name", "set-run")
    assert rc == 0 and f"{2 * n} new answers" in out and "run 'set-run'" in out
    assert (synth_dir / "rollouts" / "set-run.parquet").is_file()

    # one curator's blind answer on one puzzle of the set: the humans' baseline beside the model
    from db.review.human import record_answer
    from db.models.curation import User
    rec0 = json.loads(lines[0])
    with Session() as s:
        u = User(name="cur", role="curator", password_hash="-")
        s.add(u)
        s.commit()
        record_answer(s, u.id, rec0["id"], rec0["answer"], 4.0)
    report_path = tmp_path / "eval" / "report.json"
    rc, out, err = mvp(capsys, "eval", "--model", model, "--set", "cli-set", "--data", synth_dir,
                       "--max-new-tokens", 10, "--out", report_path)
    assert rc == 0
    rep = json.loads(report_path.read_text())
    assert rep["n_puzzles"] == n and rep["systems"] == ["model", *SOLVERS]   # the model beside every shortcut solver
    assert "all" in rep["groups"] and any(g.startswith("kind:") for g in rep["groups"])
    assert any(g.startswith("hardness:") for g in rep["groups"])
    for g in rep["groups"].values():
        for sysname in rep["systems"]:
            assert all(0 <= g[sysname][k] <= 1 for k in ("total", "exact", "format", "selection", "order"))
    assert rep["humans"]["puzzles"] == 1 and rep["humans"]["exact"] == 1.0
    md = report_path.with_suffix(".md").read_text()
    assert md == out and "| all | " in md and "boundary" in md
    assert "Humans (curators, blind) on the 1 puzzles of this set they answered (1 answers): exact 1.000" in md
    # the stored eval on the web (Stats / Rollouts): the curators' row beside the solvers, read now
    from app.web.pages.stats.eval import chart_html, load, summary_html
    html = summary_html(*load(Session))
    assert '<td>humans (curators, blind)</td><td>1</td><td>1.000' in html, html
    with Session() as s:
        rec1 = json.loads(lines[1])                                  # a second puzzle, answered wrong
        wrong = [o["label"] for o in rec1["options"] if o["kind"] != "target"][:len(rec1["answer"])]
        record_answer(s, u.id, rec1["id"], wrong, 2.0)
    evals, humans = load(Session)
    assert '<td>humans (curators, blind)</td><td>2</td><td>0.500' in summary_html(evals, humans)
    assert "humans" in chart_html(evals, "exact", humans) and "humans" not in chart_html(evals, "exact")


def test_bad_inputs_are_one_line_errors(capsys, tmp_path, synth_dir, tiny_model_dir):
    rc, _, err = mvp(capsys, "rollout", "--model", tmp_path / "nope", "--puzzles", synth_dir / "puzzles.jsonl",
                     "--data", synth_dir, "--no-db")
    assert rc == 2 and err.startswith("error:") and "not a directory" in err and "Traceback" not in err
    rc, _, err = mvp(capsys, "eval", "--model", tmp_path, "--puzzles", tmp_path / "missing.jsonl")
    assert rc == 2 and "does not exist" in err
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"id": 1}\nnot json\n')
    rc, _, err = mvp(capsys, "eval", "--model", tmp_path, "--puzzles", bad)
    assert rc == 2 and "bad.jsonl:2: not JSON" in err
    rc, _, err = mvp(capsys, "rollout", "--model", tmp_path, "--set", "no-such-set", "--data", synth_dir)
    assert rc == 2 and "no curated set named 'no-such-set'" in err
    rc, _, err = mvp(capsys, "rollout", "--model", tmp_path, "--puzzles", synth_dir / "puzzles.jsonl", "-G", 0)
    assert rc == 2 and "-G must be at least 1" in err
    # a path the OS refuses: its reason and the path, one line
    rc, _, err = mvp(capsys, "tiny-model", "/proc/no-such-dir/model")
    assert rc == 2 and err.strip() == "error: No such file or directory: /proc/no-such-dir", err
    # sampling and prompt settings out of range: one line naming the setting, before a model loads
    # (tmp_path is not a model: had it got that far, the error would say so instead)
    # (the ranges are the training configs' own: mvp_core/model/sampler.py RANGES)
    for flags, says in ((["--temperature", "-1"], "temperature must be in [0.001, 10], got -1.0"),
                        (["--top-p", "2"], "top_p must be in (0, 1] (1: off), got 2.0"),
                        (["--top-k", "-3"], "top_k must be in [0, 1000000] (0: off), got -3"),
                        (["--repetition-penalty", "0"], "repetition_penalty must be in [0.001, 10] (1: off), got 0.0"),
                        (["--max-new-tokens", "0"], "max_new_tokens must be >= 1, got 0"),
                        (["--max-pixels", "-5"], "max_pixels must be a positive number of pixels, got -5")):
        for cmd in ("eval", "rollout"):
            rc, _, err = mvp(capsys, cmd, "--model", tmp_path, "--puzzles", synth_dir / "puzzles.jsonl",
                             "--data", synth_dir, "--no-db", *flags)
            assert rc == 2 and err.strip() == f"error: {says}", (cmd, flags, err)
    # counts below 1 are argparse's one-line refusal (a negative --limit silently dropped the last
    # puzzles); a device this machine lacks is one line before the weights load (was a traceback)
    for flags, says in ((["--limit", "-5"], "argument --limit: must be at least 1, not -5"),
                        (["--threads", "0"], "argument --threads: must be at least 1, not 0")):
        with pytest.raises(SystemExit) as ex:
            mvp(capsys, "eval", "--model", tmp_path, "--puzzles", synth_dir / "puzzles.jsonl", *flags)
        assert ex.value.code == 2 and says in capsys.readouterr().err
    rc, _, err = mvp(capsys, "eval", "--model", tiny_model_dir, "--puzzles", synth_dir / "puzzles.jsonl",
                     "--data", synth_dir, "--no-db", "--device", "cuda:99")
    assert rc == 2 and err.startswith("error: device cuda:99: this machine has") and err.count("\n") == 1, err


def test_bad_records_and_missing_frames_lose_nothing(capsys, tmp_path, synth_dir, tiny_model_dir):
    recs = [json.loads(x) for x in (synth_dir / "puzzles.jsonl").read_text().splitlines()][:2]
    notrec = tmp_path / "notrec.jsonl"
    notrec.write_text('{"id": "x"}\n')
    rc, _, err = mvp(capsys, "rollout", "--model", tiny_model_dir, "--puzzles", notrec, "--no-db")
    assert rc == 2 and f"puzzle 1 of {notrec} is not a puzzle (puzzle record lacks frames" in err
    # consistent-looking records that are no puzzle: refused up front, not scored 0 in silence
    for change, says in ((lambda r: r.update(answer=["Z"] * len(r["answer"])), "distinct labels of the options"),
                         (lambda r: r["options"][1].update(label=r["options"][0]["label"]), "option labels repeat"),
                         (lambda r: r["mask"].update(start=len(r["frames"])), "does not fit")):
        bad = json.loads(json.dumps(recs[0]))
        change(bad)
        notrec.write_text(json.dumps(bad) + "\n")
        rc, _, err = mvp(capsys, "rollout", "--model", tiny_model_dir, "--puzzles", notrec, "--no-db")
        assert rc == 2 and says in err and err.count("\n") == 1, err
    # the second puzzle points at a frame that is not in the store: the first one's answers are kept
    broken = json.loads(json.dumps(recs))
    good_uri = broken[1]["options"][0]["uri"]
    broken[1]["options"][0]["uri"] = "frames/00/missing.jpg"
    f = tmp_path / "p.jsonl"
    f.write_text("".join(json.dumps(r) + "\n" for r in broken))
    out = tmp_path / "a.parquet"
    args = ["rollout", "--model", tiny_model_dir, "--puzzles", f, "--data", synth_dir, "--no-db", "-G", 2,
            "--max-new-tokens", 6, "--out", out]
    rc, _, err = mvp(capsys, *args)
    assert rc == 2 and f"puzzle {recs[1]['id']}: cannot build the model inputs" in err
    assert "Traceback" not in err
    import pyarrow.parquet as pq
    assert pq.read_table(out)["puzzle_id"].to_pylist() == [recs[0]["id"]] * 2
    broken[1]["options"][0]["uri"] = good_uri
    f.write_text("".join(json.dumps(r) + "\n" for r in broken))
    rc, out_text, _ = mvp(capsys, *args, "--video-mode")
    assert rc == 0 and out_text.startswith("2 new answers, 4 stored for 2 puzzles")

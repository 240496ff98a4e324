"""A studio holding a warm-started GRPO run, for the Rollouts naming, Train split and chart browser tests:
a copy of the web test data (real puzzles, stored answers) plus, on disk under DATA/runs/ as the
trainer lays them out (config.yaml, status.json, metrics.jsonl, checkpoints/step_N/ holding a real
tiny model and trainer_state.json):

  a-sft   SFT from the tiny model, checkpoint step 2
  b-grpo  GRPO warm-started from a-sft's step 2, trained on split train of set SPLIT_SET, checkpoint
          step 60; its metrics log 7 steps (58-64) at reward std 0 and grad norm 0 (no learning signal)

Answers are stored for b-grpo step 60 and for a-sft step 2 (the model b-grpo started from), none for
b-grpo's own start: the Rollouts page must find the start model's answers under the other run. Then
`mvp serve` on a free port."""
from __future__ import annotations

import json
import shutil
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

import pytest
import yaml

SPLIT_SET = "named-split-set"
SFT, GRPO = "a-sft", "b-grpo"
NO_SIGNAL_STEPS = range(58, 65)


@dataclass
class NamedStudio:
    url: str
    data_dir: Path
    db_url: str
    Session: object
    server_log: Path | None = None   # `mvp serve`'s output (its tail is shown beside a failed test)


def _checkpoint(model: Path, run_dir: Path, step: int) -> Path:
    ck = run_dir / "checkpoints" / f"step_{step:06d}"
    shutil.copytree(model, ck)
    (ck / "trainer_state.json").write_text(json.dumps({"step": step}))
    return ck


def _run_dir(data: Path, name: str, trainer: str, model: str, extra: dict, metrics: list[dict]) -> Path:
    d = data / "runs" / name
    d.mkdir(parents=True)
    cfg = {"trainer": trainer, "model": model, "set_name": SPLIT_SET, **extra}
    (d / "config.yaml").write_text(yaml.safe_dump(cfg))
    (d / "status.json").write_text(json.dumps({"state": "finished", "step": metrics[-1]["step"] if metrics else 0}))
    (d / "metrics.jsonl").write_text("".join(json.dumps(m) + "\n" for m in metrics))
    return d


def _split_set(Session) -> None:
    """A frozen set whose records carry splits (by video: one video train, the other val / test)."""
    from sqlalchemy import select

    from db.models import Puzzle
    from db.sets.curated import store_set
    with Session() as s:
        rows = s.execute(select(Puzzle.record_json, Puzzle.video_id).order_by(Puzzle.video_id, Puzzle.id)).all()
        first = rows[0][1]
        lines = []
        for i, (rec_json, vid) in enumerate(rows):
            rec = json.loads(rec_json)
            rec["split"] = "train" if vid == first else ("val" if i % 2 else "test")
            lines.append(json.dumps(rec, sort_keys=True, separators=(",", ":")))
        store_set(s, SPLIT_SET, lines, 0, 0, {})
        s.commit()


def _answers(Session, run_id: str, step: int, seed: int) -> None:
    """G=4 answers per stored puzzle for the run's checkpoint at `step`, scored by the real reward."""
    import random

    from sqlalchemy import select

    from db.models import Puzzle
    from db.models.runs import Checkpoint, Rollout
    from mvp_core.reward import score_completion
    rng = random.Random(seed)
    with Session() as s:
        ck = s.scalar(select(Checkpoint.id).where(Checkpoint.run_id == run_id, Checkpoint.step == step))
        for row in s.scalars(select(Puzzle).order_by(Puzzle.id)):
            rec = json.loads(row.record_json)
            labels = [o["label"] for o in rec["options"]]
            for g in range(4):
                ch = rng.sample(labels, len(rec["answer"]))
                text = f"<think>{run_id} step {step} answer {g}</think><answer>{', '.join(ch)}</answer>"
                t = score_completion(text, rec["answer"], labels)
                s.add(Rollout(run_id=run_id, checkpoint_id=ck, puzzle_id=row.id, sample_index=g, completion=text,
                              chosen_labels=t.labels, format=t.format, selection=t.selection, order=t.order,
                              exact=t.exact, total=t.total))
        s.commit()


@pytest.fixture(scope="session")
def named_studio(web_data, tmp_path_factory):
    from fixtures_web import copy_web_data, free_port
    from testkit.web import Server

    from db.engine import open_db
    from db.models.runs import Run
    from db.runs.index import sync_runs
    from mvp_core.model.tiny import build_tiny_model
    base = tmp_path_factory.mktemp("named")
    data = base / "data"
    copy_web_data(web_data, data)
    db_url = f"sqlite:///{data / 'mvp.sqlite'}"
    Session = open_db(db_url, data)
    _split_set(Session)
    tiny = build_tiny_model(data / "tiny-model", seed=0)
    sft = _run_dir(data, SFT, "sft", str(Path(tiny).resolve()), {"set_splits": ["train"]},
                   [{"step": s, "loss": 2.0 - 0.1 * s, "token_accuracy": 0.1 * s} for s in (1, 2)])
    sft_ck = _checkpoint(tiny, sft, 2)
    flat = [{"step": s, "reward": 0.0, "reward_std": 0.0, "grad_norm": 0.0, "loss": 0.0, "kl": 0.0, "step_s": 1.5}
            for s in NO_SIGNAL_STEPS]
    grpo = _run_dir(data, GRPO, "grpo", str(sft_ck.resolve()), {"set_splits": ["train"], "max_completion_length": 8},
                    flat)
    _checkpoint(tiny, grpo, 60)
    sync_runs(Session, data)
    with Session() as s:         # the GRPO run is the newest, so the Rollouts page opens on it
        s.get(Run, SFT).created_at = datetime(2031, 1, 1, tzinfo=timezone.utc)
        s.get(Run, GRPO).created_at = datetime(2031, 1, 2, tzinfo=timezone.utc)
        s.commit()
    _answers(Session, GRPO, 60, 1)
    _answers(Session, SFT, 2, 2)
    srv = Server(data, db_url, free_port(), base / "serve.log").start()
    yield NamedStudio(srv.url, data, db_url, Session, srv.log_path)
    srv.stop()
    from app.web import jobs
    for kind in jobs.KINDS:                       # no job outlives the session
        jobs.stop(data, grace_s=5, kind=kind)

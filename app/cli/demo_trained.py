"""The demo's trained model: on the first `mvp demo`, generate videos with a clear arrow of time,
synthesise their puzzles into the demo database, split them by video, give the `learn` tiny preset
a time-capped SFT warm start (`mvp sft`, stopped by SIGTERM at the cap: it saves a checkpoint),
then store the trained checkpoint's answers and the untrained base model's on the same held-out
puzzles, so the Rollouts page shows a model that has learned beside one that has not. Later runs
find the checkpoint and the stored answers and skip all of it."""
from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path

from mvp_core.errors import UserError

TRAINED_RUN, BASE_RUN = "demo-trained-sft", "demo-untrained-base"
ROOT = Path(__file__).resolve().parents[2]


def _mvp(*args, deadline: float | None = None) -> None:
    cmd = [sys.executable, "-m", "app.cli", *map(str, args)]
    proc = subprocess.Popen(cmd, cwd=ROOT)
    stopped = False
    while proc.poll() is None:
        if deadline is not None and time.time() > deadline:
            proc.send_signal(signal.SIGTERM)      # the trainer saves a checkpoint and exits 0
            proc.wait(timeout=300)
            stopped = True                        # (before its first step it just dies: no checkpoint)
            break
        time.sleep(0.5)
    if proc.returncode != 0 and not stopped:
        raise UserError(f"demo: `mvp {args[0]}` failed (exit {proc.returncode}; see above)")


def _split(data: Path, gen: Path) -> tuple[Path, Path]:
    """Generated-video puzzles from DATA/puzzles.jsonl: 4 of 5 videos train, the rest held out."""
    recs = [json.loads(x) for x in (data / "puzzles.jsonl").read_text().splitlines() if x.strip()]
    recs = [r for r in recs if Path(r["video"]["path"]).resolve().parent == gen.resolve()]
    videos = sorted({r["video"]["id"] for r in recs})
    held = set(videos[::5])
    out = []
    for name, keep in (("train", lambda v: v not in held), ("heldout", lambda v: v in held)):
        path = data / "demo-trained" / f"{name}.jsonl"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("".join(json.dumps(r) + "\n" for r in recs if keep(r["video"]["id"])))
        out.append(path)
    return out[0], out[1]


def prepare(data: Path, url: str, minutes: float, n_videos: int = 160) -> tuple[Path, Path, Path]:
    """(trained checkpoint, base model, held-out puzzles), training on the first call only."""
    work = data / "demo-trained"
    base, run = data / "models" / "tiny-learn-base", work / "sft"
    gen = data / "generated-videos"
    if not (work / "heldout.jsonl").is_file():
        _mvp("make-videos", gen, "--n", n_videos, "--seed", 0, "--kinds", "clock")  # the kind a CPU learns in minutes
        _mvp("synth", gen, "--data", data, "--db", url, "--n", 4, "--m", 2, "--l", 2, "--per-video", 4, "--quiet")
        _split(data, gen)
    train, heldout = work / "train.jsonl", work / "heldout.jsonl"
    if not (base / "config.json").is_file():
        _mvp("tiny-model", base, "--preset", "learn")
    from mvp_core.grpo.rundir import RunDir, read_status
    if read_status(run).get("state") != "finished" and RunDir(run).latest_checkpoint() is None:
        print(f"training the demo model for up to {minutes:g} min (SFT on {train}); runs once", flush=True)
        _mvp("sft", ROOT / "configs/proof-sft.yaml", f"model={base}", f"puzzles={train}", f"data_dir={data}",
             f"output_dir={run}", "save_steps=25",
             f"eval_puzzles={heldout}", f"eval_data_dir={data}", "eval_steps=25", "eval_limit=24",
             *(["--resume"] if (run / "config.yaml").is_file() else []), deadline=time.time() + 60 * minutes)
    latest = RunDir(run).latest_checkpoint()
    if latest is None:
        raise UserError(f"demo: the SFT run in {run} saved no checkpoint")
    return latest[1], base, heldout


def store_answers(Session, data: Path, url: str, minutes: float, G: int, limit: int) -> None:
    """Stored answers of the trained checkpoint and of the base model on the same held-out puzzles."""
    from sqlalchemy import func, select

    from db.models.runs import Rollout
    with Session() as s:
        have = {r: s.scalar(select(func.count()).select_from(Rollout).where(Rollout.run_id == r)) or 0
                for r in (TRAINED_RUN, BASE_RUN)}
    if all(have.values()):
        return
    trained, base, heldout = prepare(data, url, minutes)
    for name, model in ((TRAINED_RUN, trained), (BASE_RUN, base)):
        if not have[name]:
            _mvp("rollout", "--model", model, "--puzzles", heldout, "--data", data, "--db", url, "-G", G,
                 "--limit", limit, "--name", name, "--threads", "1", "--max-new-tokens", 64)

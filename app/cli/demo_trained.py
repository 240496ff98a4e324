"""The demo's trained models: on the first `mvp demo`, generate videos with a clear arrow of time (a
seed the shipped warm start never saw), synthesise their puzzles into the demo database, split them
by video, run a short GRPO (`mvp train`, stopped by SIGTERM at the cap: it saves a checkpoint) from
the shipped SFT warm start (assets/clock-sft, trained here by `mvp sft`: its MODEL_CARD.md), then
store the answers of the warm start, of the GRPO checkpoint and of the untrained base model on the
same held-out puzzles: the Rollouts page shows models that have learned beside one that has not,
and the GRPO run's curves (training reward, held-out reward) are on the Train page's run list.

The puzzles have 5 options (l=3 distractors) where the warm start trained on 4: the shape on which
GRPO, with the MVP reward alone, lifts the warm start's held-out reward in every run measured (the
learning proof's `adapt` recipe, docs/BENCHMARKS.md "GRPO on a new puzzle shape"); on its own shape
GRPO leaves the warm start where it is. Later runs find the checkpoint and the stored answers and
skip all of it."""
from __future__ import annotations

import json
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

from mvp_core import resources
from mvp_core.errors import UserError
from mvp_core.train.rundir import RunDir, atomic_write, read_status

SFT_RUN, GRPO_RUN, BASE_RUN = "demo-sft-warm-start", "demo-grpo-from-warm-start", "demo-untrained-base"
OWN_SHAPE_RUN = "demo-sft-warm-start-own-shape"   # the warm start on the 4-option shape it was trained on
ROOT = Path(__file__).resolve().parents[2]
WARM_START = resources.warm_start()     # `mvp sft` on seed-0 clock videos (its MODEL_CARD.md)
VIDEO_SEED = 1                                 # not seed 0: every demo video is new to the warm start
DISTRACTORS = 3                                # 5 options: a shape the warm start never trained on
GRPO_STEPS = 60
OWN_SHAPE_SEED, OWN_SHAPE_VIDEOS = 2, 20        # new clock videos (not the warm start's seed 0, not VIDEO_SEED's)


def _mvp(*args, deadline: float | None = None) -> None:
    """`mvp ARGS` in a child process; SIGTERM at `deadline` (the trainer saves a checkpoint)."""
    _watch(subprocess.Popen([sys.executable, "-m", "app.cli", *map(str, args)], cwd=ROOT), f"mvp {args[0]}",
           deadline)


# The CLI's own entry point called once per command, stopping at the first that fails (its exit status).
_EACH = ("import json, sys\nfrom app.cli.main import main\nfor argv in json.loads(sys.argv[1]):\n"
         "    rc = main(argv)\n    if rc:\n        sys.exit(rc)\n")


def _mvp_each(commands: list[tuple]) -> None:
    """Several `mvp` commands one after another in one child process: the demo's rollouts import torch
    and transformers once, not once each (about 7 s of CPU a process on the 2-core machine, docs/grpo.md)."""
    if commands:
        argvs = json.dumps([[str(a) for a in c] for c in commands])
        _watch(subprocess.Popen([sys.executable, "-c", _EACH, argvs], cwd=ROOT),
               f"mvp {' / '.join(sorted({str(c[0]) for c in commands}))}")


def _watch(proc: subprocess.Popen, label: str, deadline: float | None = None) -> None:
    """Wait for the child `label`; SIGTERM at `deadline`; stopped too if the demo is interrupted."""
    stopped = False
    try:
        while proc.poll() is None:
            if deadline is not None and time.time() > deadline:
                proc.send_signal(signal.SIGTERM)      # the trainer saves a checkpoint and exits 0
                proc.wait(timeout=300)
                stopped = True                        # (before its first step it just dies: no checkpoint)
                break
            time.sleep(0.5)
    except BaseException:
        _stop(proc, label)
        raise
    if proc.returncode != 0 and not stopped:
        raise UserError(f"demo: `{label}` failed (exit {proc.returncode}; see above)")


def _stop(proc: subprocess.Popen, label: str) -> None:
    """The demo was interrupted: stop the child too, never leave it writing to the data directory
    behind our back (the trainer finishes its step and saves on SIGTERM; a second Ctrl-C kills it)."""
    if proc.poll() is not None:
        return
    print(f"demo: stopping `{label}` (pid {proc.pid})", file=sys.stderr, flush=True)
    try:
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=180)
    except BaseException:
        proc.kill()
        proc.wait()


def build_beside(dest: Path, build) -> None:
    """`build(folder)` into DEST.part, then renamed to DEST: a build cut short (config.json written,
    weights not) is never taken for a finished model on the next run."""
    part = dest.with_name(dest.name + ".part")
    shutil.rmtree(part, ignore_errors=True)       # tiny-model refuses a non-empty folder
    shutil.rmtree(dest, ignore_errors=True)
    build(part)
    part.rename(dest)


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
        atomic_write(path, "".join(json.dumps(r) + "\n" for r in recs if keep(r["video"]["id"])))
        out.append(path)
    return out[0], out[1]


def prepare(data: Path, url: str, minutes: float, n_videos: int = 100) -> tuple[Path, Path, Path]:
    """(GRPO checkpoint, base model, held-out puzzles), training on the first call only."""
    work = data / "demo-trained"
    base, run = data / "models" / "tiny-learn-base", data / "runs" / "demo-grpo"   # DATA/runs: on the Train page
    gen = data / "generated-videos"
    if not (WARM_START / "config.json").is_file():
        raise UserError(f"demo: the shipped warm start {WARM_START} is missing (a partial checkout?)")
    if not (work / "heldout.jsonl").is_file():
        _mvp("make-videos", gen, "--n", n_videos, "--seed", VIDEO_SEED, "--kinds", "clock")
        _mvp("synth", gen, "--data", data, "--db", url, "--n", 4, "--m", 2, "--l", DISTRACTORS, "--per-video", 4,
             "--quiet")
        _split(data, gen)
    train, heldout = work / "train.jsonl", work / "heldout.jsonl"
    if not (base / "config.json").is_file():
        # the warm start's initialisation
        build_beside(base, lambda folder: _mvp("tiny-model", folder, "--preset", "learn", "--seed", 0))
    trained = work / "trained"   # training ended (finished or stopped at the cap); absent: cut short, resume it
    if read_status(run).get("state") != "finished" and not trained.is_file():
        print(f"training the demo model for up to {minutes:g} min (GRPO from {WARM_START.name} on {train}); "
              "runs once", flush=True)
        # the adapt recipe's GRPO (configs/proof-grpo.yaml: 4 puzzles x G=8, lr 1e-4, vision frozen),
        # fewer steps: its held-out reward rises by ~0.15 within 60 (docs/BENCHMARKS.md)
        _mvp("train", resources.config("proof-grpo.yaml"), f"model={WARM_START}", f"puzzles={train}",
             f"data_dir={data}", f"output_dir={run}", f"eval_puzzles={heldout}", f"eval_data_dir={data}",
             f"max_steps={GRPO_STEPS}", "save_steps=20", "eval_steps=20", "eval_limit=24",
             *(["--resume"] if (run / "config.yaml").is_file() else []), deadline=time.time() + 60 * minutes)
        if RunDir(run).latest_checkpoint() is not None:
            atomic_write(trained, "")
    latest = RunDir(run).latest_checkpoint()
    if latest is None:
        raise UserError(f"demo: the GRPO run in {run} saved no checkpoint")
    return latest[1], base, heldout


def own_shape_puzzles(data: Path, url: str) -> Path:
    """Puzzles of the warm start's own shape (4 options: m=2, l=2) from new clock videos: where a newcomer
    sees it answer correctly (its MODEL_CARD.md)."""
    out = data / "demo-trained" / "own-shape.jsonl"
    if out.is_file():
        return out
    gen = data / "generated-videos-own-shape"
    _mvp("make-videos", gen, "--n", OWN_SHAPE_VIDEOS, "--seed", OWN_SHAPE_SEED, "--kinds", "clock")
    _mvp("synth", gen, "--data", data, "--db", url, "--n", 4, "--m", 2, "--l", 2, "--per-video", 2, "--quiet")
    recs = [x for x in (data / "puzzles.jsonl").read_text().splitlines()
            if x.strip() and Path(json.loads(x)["video"]["path"]).resolve().parent == gen.resolve()]
    out.parent.mkdir(parents=True, exist_ok=True)
    atomic_write(out, "".join(r + "\n" for r in recs))
    return out


def run_done(Session, run_id: str) -> bool:
    """Whether the rollout run finished: a cut-short run is 'running' or 'stopped' with some answers
    (rerunning `mvp rollout` resumes it, storing only the missing ones)."""
    from db.models.runs import Run
    with Session() as s:
        run = s.get(Run, run_id)
        return run is not None and run.status == "done"


def store_answers(Session, data: Path, url: str, minutes: float, G: int, limit: int) -> None:
    """Stored answers of the warm start, the GRPO checkpoint and the base model on the same held-out puzzles,
    and of the warm start on its own shape: one process for all of them, after training."""
    have = {r: run_done(Session, r) for r in (SFT_RUN, GRPO_RUN, BASE_RUN, OWN_SHAPE_RUN)}
    if all(have.values()):
        return
    own_shape = None if have[OWN_SHAPE_RUN] else own_shape_puzzles(data, url)   # synthesised first, as ever
    trained, base, heldout = prepare(data, url, minutes)
    # stored last = newest = what the Rollouts page opens on (db/rollout_views.sources): the GRPO model,
    # beside the warm start it began from ("Compare with": rollout_views.start_source)
    todo = [(OWN_SHAPE_RUN, WARM_START, own_shape)] + [(name, model, heldout) for name, model in
                                                      ((BASE_RUN, base), (SFT_RUN, WARM_START), (GRPO_RUN, trained))]
    _mvp_each([rollout_command(model, puzzles, data, url, name, G, limit) for name, model, puzzles in todo
               if not have[name]])


def rollout_command(model, puzzles: Path, data: Path, url: str, name: str, G: int, limit: int) -> tuple:
    """The `mvp rollout` arguments of one model's stored answers in the demo (bench/demo_time.py times these)."""
    return ("rollout", "--model", model, "--puzzles", puzzles, "--data", data, "--db", url, "-G", G,
            "--limit", limit, "--name", name, "--threads", "1", "--max-new-tokens", 64)

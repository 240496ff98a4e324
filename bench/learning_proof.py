"""The learning proof: does SFT then GRPO teach a model to solve MVP puzzles from videos it never
trained on? Runs the project's real commands end to end, each as its own process (the trainers as
`--procs` torchrun ranks, 2 by default: the 2-core machine's fastest way to run them):

  mvp make-videos (when no videos are given) -> split by video -> mvp synth (train, test)
  -> mvp tiny-model --preset learn -> mvp sft -> mvp train (GRPO from the SFT checkpoint)
  -> mvp eval (base, sft, grpo) on the held-out test puzzles

and prints one table on the test puzzles: chance, the shortcut audit's solvers, base, sft, grpo,
exact match and mean reward with 95% bootstrap intervals over videos, and GRPO minus SFT (paired).
REPORT.json holds the same table; a PNG plots training and held-out reward against step.

    python bench/learning_proof.py --out REPORT.json                 # generated videos
    python bench/learning_proof.py --videos DIR --out REPORT.json    # 80/20 split by video, seeded
    python bench/learning_proof.py --train DIR --test DIR --out REPORT.json
    python bench/learning_proof.py --recipe grpo-large --out REPORT.json  # GRPO above SFT (from assets/clock-sft)
    python bench/learning_proof.py --recipe adapt --out REPORT.json       # GRPO on a shape SFT never saw, ~1 min

`--budget-min` caps the wall time: each trainer gets a share and is stopped with SIGTERM when its
share is spent (it saves a checkpoint and exits cleanly; the proof goes on with that checkpoint).
`--sft-from DIR` skips the SFT and starts GRPO from a warm start trained before (assets/clock-sft).
`--in-process` runs every command inside this process instead (torch and transformers are imported
once, not ~10 s per command; the trainers then run to max_steps): the CI-sized proof
(docs/BENCHMARKS.md, "Learning proof") runs this way with `--preset ci` and configs/ci-*.yaml."""
from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
VIDEO_EXT = {".mp4", ".mov", ".mkv", ".webm", ".avi", ".m4v"}
# Shares of what is left of the budget once the puzzles are made: SFT, GRPO, the three evaluations.
# A trainer still going when its share is spent is stopped (SIGTERM) and the proof goes on from its
# checkpoint; on 2 cores both trainers finish within their shares (docs/BENCHMARKS.md).
SFT_SHARE, GRPO_SHARE, EVAL_SHARE = 0.45, 0.40, 0.15
# Named sets of defaults (`--recipe`; recipe lists go before the command line's, whose settings then
# win). chain (the default): the whole chain, SFT trained here on 480 videos (as assets/clock-sft was),
# GRPO's large batch from it (--grpo-config's default, a held-out point every 25 steps for the plot),
# 720 held-out videos (~2,065 puzzles) so a ~+0.015 difference can clear its interval: grpo - sft
# +0.020 [+0.009, +0.030] and +0.033 [+0.021, +0.045] (seeds 0, 1) in 27-29 min on 2 cores
# (docs/BENCHMARKS.md, "Learning proof"). An SFT on
# 600 videos left GRPO no room (0.96 held-out reward; -0.002). grpo-large: the same GRPO stage from the
# shipped SFT on 1,500 new videos, 900 held out; +0.009 to +0.015 in four runs.
# adapt: GRPO alone teaches the shipped SFT a puzzle shape it never trained on (5 options, l=3, where
# it was trained on 4): held-out reward +0.10 to +0.18 over it in 30 small steps, about a minute on
# one core; the CI test tests/test_grpo_heldout_lift.py runs it (docs/BENCHMARKS.md, "GRPO on a new
# puzzle shape"). At lr 5e-5, not the config's 1e-4: at 1e-4 the lift hung on the CPU's float path (on
# an AVX2-only CPU seed 1234 gave +0.005 and its training reward fell, where an earlier machine gave +0.105);
# at 5e-5 four seeds gave +0.10 to +0.18 on the AVX2 CPU.
# greedy answers per generate call: the same answers as 8 (`mvp eval`'s default) in 0.67x its CPU time on
# the tiny models (docs/BENCHMARKS.md, "Evaluation batch")
EVAL_BATCH = 32
WARM_START = ROOT / "assets" / "clock-sft"
WARM_START_VIDEO_SEED = 0      # `mvp make-videos --seed` of its training videos (its MODEL_CARD.md)
RECIPES = {
    "chain": {"n_videos": 1200, "test_share": 0.6, "grpo_set": ["eval_steps=25"]},
    "grpo-large": {"sft_from": str(WARM_START), "n_videos": 1500, "test_share": 0.6, "eval_limit": 0, "seed": 7},
    "adapt": {"sft_from": str(WARM_START), "n": 4, "m": 2, "l": 3, "n_videos": 140, "test_share": 4 / 7,
              "grpo_config": str(ROOT / "configs/proof-grpo.yaml"), "grpo_steps": 30,
              "grpo_set": ["eval_steps=0", "learning_rate=5e-5"],
              "eval_limit": 0, "systems": "sft,grpo", "in_process": True, "seed": 1},
}


IN_PROCESS = False     # --in-process: `mvp` commands run through app.cli.main in this process


def mvp(*args, env=None, deadline: float | None = None, log: Path | None = None, ranks: int = 1) -> int:
    """Run `mvp ARGS` to completion, or SIGTERM it at `deadline` (then wait for its clean exit).
    ranks > 1: as that many torchrun processes (torchrun passes the SIGTERM on to every rank; they
    agree on the step to stop at and rank 0 saves the checkpoint)."""
    launcher = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node", str(ranks)] \
        if ranks > 1 else [sys.executable]
    cmd = [*launcher, "-m", "app.cli", *map(str, args)]
    print(("$ torchrun --nproc_per_node %d -m app.cli " % ranks if ranks > 1 else "$ mvp ")
          + " ".join(map(str, args)), flush=True)
    if IN_PROCESS:
        from app.cli.main import main as mvp_main
        rc = mvp_main([str(a) for a in args])
        if rc != 0:
            raise SystemExit(f"mvp {args[0]} failed (exit {rc})")
        return rc
    out = open(log, "a") if log else None
    proc = subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=out or None, stderr=subprocess.STDOUT if out else None)
    stopped = False
    try:
        while proc.poll() is None:
            if deadline is not None and time.time() > deadline:
                print("  time share spent: stopping it (SIGTERM), it saves a checkpoint", flush=True)
                proc.send_signal(signal.SIGTERM)
                proc.wait(timeout=600)
                stopped = True
                break
            time.sleep(0.5)
    finally:
        if out:
            out.close()
    if proc.returncode != 0 and not stopped:
        raise SystemExit(f"mvp {args[0]} failed (exit {proc.returncode}); see {log or 'above'}")
    return proc.returncode


def split_videos(args, work: Path, env) -> tuple[list[Path], list[Path]]:
    if args.train or args.test:
        if not (args.train and args.test):
            raise SystemExit("--train and --test go together")
        return _videos(Path(args.train)), _videos(Path(args.test))
    src = Path(args.videos) if args.videos else work / "videos"
    if not args.videos and args.sft_from and args.seed == WARM_START_VIDEO_SEED \
            and Path(args.sft_from).resolve() == WARM_START.resolve():
        raise SystemExit(f"--seed {args.seed} generates the videos {WARM_START.name} was trained on, so its "
                         "held-out puzzles would not be new to it: give another --seed")
    if not args.videos:
        mvp("make-videos", src, "--n", args.n_videos, "--seed", args.seed, "--kinds", args.kinds,
            "--seconds", args.video_seconds, "--fps", args.video_fps, "--workers", args.procs, env=env)
    import numpy as np
    files = _videos(src)
    if len(files) < 2:
        raise SystemExit(f"{src}: need at least 2 videos to split by video")
    perm = np.random.default_rng(args.seed).permutation(len(files))
    n_test = max(1, int(round(args.test_share * len(files))))
    return [files[i] for i in sorted(perm[n_test:])], [files[i] for i in sorted(perm[:n_test])]


def _videos(d: Path) -> list[Path]:
    if not d.is_dir():
        raise SystemExit(f"{d} is not a folder of videos")
    files = sorted(p.resolve() for p in d.rglob("*") if p.suffix.lower() in VIDEO_EXT and p.is_file())
    if not files:
        raise SystemExit(f"{d} holds no videos")
    return files


def synth(files: list[Path], data: Path, args, env) -> Path:
    jsonl = data / "puzzles.jsonl"
    if not jsonl.is_file():
        mvp("synth", *files, "--data", data, "--db", f"sqlite:///{data / 'mvp.sqlite'}", "--n", args.n,
            "--m", args.m, "--l", args.l, "--per-video", args.per_video, "--fps", args.synth_fps, "--seed", args.seed,
            "--workers", args.procs, "--quiet", env=env)
    n = sum(1 for line in jsonl.read_text().splitlines() if line.strip())
    if n == 0:
        raise SystemExit(f"synthesis made no puzzles in {data}")
    return jsonl


def latest_checkpoint(run: Path) -> Path:
    from mvp_core.train.rundir import RunDir
    latest = RunDir(run).latest_checkpoint()
    if latest is None:
        raise SystemExit(f"{run} has no checkpoint")
    return latest[1]


def _run_model(run: Path) -> Path:
    import yaml
    return Path(str((yaml.safe_load((run / "config.yaml").read_text()) or {}).get("model", ""))).resolve()


def train_all(args, work: Path, train_jsonl: Path, test_jsonl: Path, env, t_end: float,
              systems: tuple[str, ...]) -> dict[str, Path]:
    if args.models_from:           # evaluate the models another proof trained on new test videos
        src = Path(args.models_from)
        return {"base": src / "base", "sft": latest_checkpoint(src / "sft"), "grpo": latest_checkpoint(src / "grpo"),
                "_sft_run": src / "sft", "_grpo_run": src / "grpo"}
    base = work / "base"
    # the random initialisation: SFT's start, or evaluated as a system (with --sft-from, neither may be asked)
    if (not args.sft_from or "base" in systems) and not (base / "config.json").is_file():
        shutil.rmtree(base, ignore_errors=True)       # a build cut short: tiny-model refuses a non-empty folder
        # with --sft-from, the random initialisation that checkpoint was trained from (its card)
        mvp("tiny-model", base, "--preset", args.preset, "--seed", 0 if args.sft_from else args.seed, env=env)
    heldout = [f"eval_puzzles={test_jsonl}", f"eval_limit={args.eval_limit}"] if args.eval_limit else []
    sft = work / "sft"
    budget = t_end - time.time()
    if args.sft_from:              # GRPO starts from a warm start trained before (e.g. assets/clock-sft)
        sft_ckpt = Path(args.sft_from)
        if not (sft_ckpt / "config.json").is_file():
            raise SystemExit(f"--sft-from {sft_ckpt}: not a model directory (no config.json)")
    else:
        if not (sft / "status.json").is_file() or json.loads((sft / "status.json").read_text())["state"] != "finished":
            ranks, per_rank = split_over_ranks(args.sft_config, args.sft_set, args.procs)
            mvp("sft", args.sft_config, f"model={base}", f"puzzles={train_jsonl}", f"output_dir={sft}",
                f"max_steps={args.sft_steps}", f"seed={args.seed}", *heldout, *args.sft_set, *per_rank,
                *(["--resume"] if (sft / "config.yaml").is_file() else []), env=env, ranks=ranks,
                deadline=time.time() + budget * SFT_SHARE / (SFT_SHARE + GRPO_SHARE + EVAL_SHARE), log=work / "sft.log")
        sft_ckpt = latest_checkpoint(sft)
    grpo = work / "grpo"
    if (grpo / "config.yaml").is_file() and _run_model(grpo) != Path(sft_ckpt).resolve():
        shutil.rmtree(grpo)          # started from an SFT checkpoint the SFT has since gone past: start over
    budget = t_end - time.time()
    if not (grpo / "status.json").is_file() or json.loads((grpo / "status.json").read_text())["state"] != "finished":
        ranks, per_rank = split_over_ranks(args.grpo_config, args.grpo_set, args.procs)
        mvp("train", args.grpo_config, f"model={sft_ckpt}", f"puzzles={train_jsonl}",
            f"output_dir={grpo}", f"max_steps={args.grpo_steps}", f"seed={args.seed}", *_grpo_heldout(heldout),
            *args.grpo_set, *per_rank,
            *(["--resume"] if (grpo / "config.yaml").is_file() else []),
            env=env, deadline=time.time() + budget * GRPO_SHARE / (GRPO_SHARE + EVAL_SHARE), log=work / "grpo.log",
            ranks=ranks)
    return {"base": base, "sft": sft_ckpt, "grpo": latest_checkpoint(grpo),
            "_sft_run": None if args.sft_from else sft, "_grpo_run": grpo}


def systems_of(args) -> tuple[str, ...]:
    """The models --systems asks to evaluate, in its order."""
    systems = tuple(x.strip() for x in args.systems.split(",") if x.strip())
    if not systems or set(systems) - {"base", "sft", "grpo"}:
        raise SystemExit(f"--systems {args.systems!r}: give some of base, sft, grpo")
    return systems


def split_over_ranks(config: str, sets: list[str], procs: int) -> tuple[int, list[str]]:
    """A trainer's processes, and the setting that keeps its config's puzzles per step across them:
    with N ranks each takes 1/N of the step's puzzles, so gradient_accumulation_steps (else
    per_device_train_batch_size) is divided by N. Two ranks use the 2 cores best (GRPO 1.9x one
    thread, SFT 1.8x: docs/BENCHMARKS.md). One process when neither divides, or in-process."""
    import yaml
    if procs < 2 or IN_PROCESS:
        return 1, []
    settings = dict(yaml.safe_load(Path(config).read_text()) or {})
    settings.update(kv.split("=", 1) for kv in sets if "=" in kv)
    for key in ("gradient_accumulation_steps", "per_device_train_batch_size"):
        value = int(settings.get(key, 1))
        if value % procs == 0:
            return procs, [f"{key}={value // procs}"]
    return 1, []


def _grpo_heldout(heldout: list[str]) -> list[str]:
    """GRPO's held-out settings where its config has them."""
    from mvp_core.train.config import GRPOConfig
    names = getattr(GRPOConfig, "model_fields", None) or getattr(GRPOConfig, "__dataclass_fields__", {})
    return heldout if "eval_puzzles" in names else []


def evaluate_all(models: dict[str, Path], test_jsonl: Path, work: Path, env, max_new_tokens: int = 64,
                 systems: tuple[str, ...] = ("base", "sft", "grpo"), procs: int = 1) -> dict[str, dict]:
    """`mvp eval` of each system on the test puzzles, `procs` at a time, the trained models first;
    a last round with fewer evaluations than processes gives each the spare cores as threads."""
    from concurrent.futures import ThreadPoolExecutor
    procs = 1 if IN_PROCESS else max(1, procs)

    def one(name: str, threads: int) -> dict:
        out = work / "eval" / f"{name}.json"
        if not out.is_file():
            mvp("eval", "--model", models[name], "--puzzles", test_jsonl, "--out", out, "--no-db",
                "--threads", threads, "--max-new-tokens", max_new_tokens, "--batch-puzzles", EVAL_BATCH, env=env,
                log=work / f"eval_{name}.log")
        return json.loads(out.read_text())
    order = sorted(systems, key=lambda name: name == "base")       # the random-weight base last
    reports = {}
    for k in range(0, len(order), procs):
        rnd = order[k:k + procs]
        with ThreadPoolExecutor(max_workers=len(rnd)) as pool:
            reports.update(zip(rnd, pool.map(one, rnd, [max(1, procs // len(rnd))] * len(rnd))))
    return {name: reports[name] for name in systems}


def parse_args(argv=None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--videos", help="one folder of videos, split 80/20 by video (seeded)")
    p.add_argument("--train", help="folder of training videos (with --test)")
    p.add_argument("--test", help="folder of held-out videos (with --train)")
    p.add_argument("--work", default=str(ROOT / ".cache" / "learning_proof"), help="working directory (reused)")
    p.add_argument("--out", default=None, help="REPORT.json path (default WORK/REPORT.json)")
    p.add_argument("--budget-min", type=float, default=30.0, help="wall-time budget in minutes (default 30)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--n-videos", type=int, default=600, help="videos to generate without --videos/--train")
    p.add_argument("--kinds", default="clock", help="kinds of generated videos (mvp make-videos --kinds); the "
                                                   "default budget teaches clock (docs/BENCHMARKS.md)")
    p.add_argument("--video-seconds", type=float, default=12.0, help="length of the generated videos")
    p.add_argument("--video-fps", type=float, default=2.0, help="frame rate of the generated videos")
    p.add_argument("--synth-fps", type=float, default=1.0, help="`mvp synth --fps`: frames sampled per second")
    p.add_argument("--per-video", type=int, default=4)
    p.add_argument("--n", type=int, default=4, help="keyframes per puzzle")
    p.add_argument("--m", type=int, default=2, help="masked frames")
    p.add_argument("--l", type=int, default=2, help="distractors")
    p.add_argument("--sft-steps", type=int, default=1300)
    p.add_argument("--grpo-steps", type=int, default=150)
    p.add_argument("--sft-set", action="append", default=[], metavar="KEY=VALUE",
                   help="extra `mvp sft` setting (repeatable), e.g. eval_steps=0")
    p.add_argument("--grpo-set", action="append", default=[], metavar="KEY=VALUE",
                   help="extra `mvp train` setting (repeatable), e.g. per_device_train_batch_size=16")
    p.add_argument("--models-from", help="skip training: evaluate the base/sft/grpo models of this earlier "
                                         "proof's work directory on this run's test videos")
    p.add_argument("--sft-from", help="skip tiny-model and SFT: start GRPO from this SFT model directory "
                                      "(its base: `mvp tiny-model --preset PRESET --seed 0`)")
    p.add_argument("--test-share", type=float, default=0.2, help="share of the videos held out (--videos or "
                                                                "generated; default 0.2)")
    p.add_argument("--eval-limit", type=int, default=120, help="held-out puzzles evaluated during training "
                                                              "(0: none, the final evaluations only)")
    p.add_argument("--preset", default="learn", help="`mvp tiny-model --preset` of the base model (default learn)")
    p.add_argument("--sft-config", default=str(ROOT / "configs/proof-sft.yaml"), help="`mvp sft` config file")
    p.add_argument("--grpo-config", default=str(ROOT / "configs/proof-grpo-large.yaml"), help="`mvp train` config "
                   "file (default: the large-batch recipe, 32 puzzles x 8 answers per step)")
    p.add_argument("--systems", default="base,sft,grpo",
                   help="models evaluated on the test puzzles (comma-separated of base, sft, grpo; default all)")
    p.add_argument("--max-new-tokens", type=int, default=64, help="answer length of the final evaluations")
    p.add_argument("--procs", type=int, default=min(2, os.cpu_count() or 1),
                   help="processes at once (default 2, or 1 on one core): video and synthesis workers, the "
                        "trainers' torchrun ranks (the same puzzles per step) and evaluations; 1: one thread throughout")
    p.add_argument("--in-process", action="store_true",
                   help="run the commands in this process (one torch import; no time shares: the trainers "
                        "run to max_steps)")
    p.add_argument("--recipe", choices=sorted(RECIPES), default="chain",
                   help="chain (default): the whole chain, SFT trained here; grpo-large: GRPO's large-batch "
                        "recipe from the shipped SFT on 1,500 new videos, 60%% held out; adapt: GRPO teaches the "
                        "shipped SFT 5-option puzzles (it was trained on 4), 140 new videos, 80 held out, "
                        "~1 min (each recipe's flags unless given)")
    # the recipe's values become the defaults, so a flag given on the command line (even abbreviated)
    # wins; --grpo-set appends to a copy of its default list: the recipe's settings first, then yours
    p.set_defaults(**RECIPES[p.parse_known_args(argv)[0].recipe])
    args = p.parse_args(argv)
    if args.procs < 1:
        p.error(f"--procs must be at least 1, got {args.procs}")
    return args


def main(argv=None) -> int:
    args = parse_args(argv)
    global IN_PROCESS
    IN_PROCESS = args.in_process
    if IN_PROCESS:
        import torch
        torch.set_num_threads(1)     # what OMP_NUM_THREADS=1 gives the subprocesses (2 shared cores)
    systems = systems_of(args)       # a wrong --systems is refused before any work
    t0 = time.time()
    t_end = t0 + 60 * args.budget_min
    work = Path(args.work)
    work.mkdir(parents=True, exist_ok=True)
    env = dict(os.environ, PYTHONPATH=str(ROOT), OMP_NUM_THREADS="1", PYTHONUNBUFFERED="1")

    stages: dict[str, float] = {}

    def lap(name: str) -> None:      # wall seconds of the stage that just ended
        stages[name] = time.time() - t0 - sum(stages.values())
    train_files, test_files = split_videos(args, work, env)
    lap("videos")
    if args.models_from and args.videos:
        train_files, test_files = [], train_files + test_files    # every video is new to those models
    if set(train_files) & set(test_files):
        raise SystemExit("a video is in both the train and the test folder")
    train_jsonl = synth(train_files, work / "train", args, env) if train_files else None
    test_jsonl = synth(test_files, work / "test", args, env)
    lap("synth")
    models = train_all(args, work, train_jsonl, test_jsonl, env, t_end, systems)
    lap("train")
    reports = evaluate_all(models, test_jsonl, work, env, args.max_new_tokens, systems, args.procs)
    lap("eval")

    from bench.learning_stats import plot, report, system_scores, table
    from mvp_core.puzzle import Puzzle
    puzzles = [Puzzle.from_dict(json.loads(x)) for x in test_jsonl.read_text().splitlines() if x.strip()]
    rep = report(puzzles, system_scores(puzzles, reports), args.seed)
    rep.update(n_train_videos=len(train_files), n_test_videos_given=len(test_files),
               wall_s=round(time.time() - t0, 1), stage_s={k: round(v, 1) for k, v in stages.items()},
               checkpoints={k: str(v) for k, v in models.items()})
    png = plot({k: models[f"_{k}_run"] for k in ("sft", "grpo") if models[f"_{k}_run"]}, work / "learning_curves.png")
    rep["plot"] = str(png) if png else None
    out = Path(args.out) if args.out else work / "REPORT.json"
    out.write_text(json.dumps(rep, indent=2))
    print(table(rep))
    print(f"wall time {rep['wall_s'] / 60:.1f} min; report {out}" + (f"; plot {png}" if png else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())

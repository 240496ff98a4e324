"""The studio's trainers beside TRL's, side by side in one run (docs/BENCHMARKS.md, "Against TRL"):
`mvp train` (GRPO) against TRL's GRPOTrainer at each group size G, and `mvp sft` against TRL's
SFTTrainer, on the same tiny Qwen2.5-VL (assets/clock-sft), the same puzzles and prompts (TRL's rows
are the project's `trl` export rows, mvp_core/export/formats.py), the same reward (TRL gets the
project's reward in its form, mvp_core/export/logged_reward.py), the same optimizer settings, the
same trainable weights (both freeze the vision tower, the studio's default), one thread per process.
With `--processes 1,2` every GRPO pair also runs as 2 processes: the studio under torchrun (gloo), TRL
under `accelerate launch --multi_gpu --num_processes 2` (accelerate's multi-process launcher, which is
torchrun's; with `--cpu` it starts one process only; TRL's `use_cpu` keeps it on the CPU, gloo), each
process taking the 1-process batch. Each worker reports how many processes its run had, and a run with
another count fails. Every configuration runs as its own launch, repeated and interleaved
(A B C A B C ...) so a noisy machine slows all alike; the figure is the median seconds per
optimizer step after the first (warm-up) step, the ratio studio / TRL, the peak RSS of the largest
process, and the mean completion length (tokens) each sampled: a sampler that stops earlier does
less work, so compare steps at similar lengths. `--unshared` adds the studio with share_prompt=false.

    python bench/peer_trl.py [--groups 2,4,8,16] [--processes 1,2] [--prompts 2] [--steps 4] [--repeats 3]

A configuration's worker is this file run with `--worker` (TRL keeps process-wide state)."""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

MODEL = ROOT / "assets" / "clock-sft"
COMPLETION_TOKENS = 32
LR = 1e-5
BIN = Path(sys.executable).parent


def _env() -> dict:
    # MVP_FORCE_CPU: the studio on the CPU even where a GPU is, as TRL's workers are (`use_cpu`)
    return dict(os.environ, PYTHONPATH=str(ROOT), OMP_NUM_THREADS="1", MKL_NUM_THREADS="1",
                TOKENIZERS_PARALLELISM="false", PYTHONUNBUFFERED="1", MVP_FORCE_CPU="1")


def make_puzzles(work: Path) -> Path:
    """WORK/data/puzzles.jsonl from generated clock videos (`mvp make-videos`, `mvp synth`): the puzzle
    shape the warm start was trained on."""
    from testkit.cli import run_mvp
    run_mvp("make-videos", work / "videos", "--n", 6, "--seed", 11, "--kinds", "clock", timeout=600)
    run_mvp("synth", work / "videos", "--data", work / "data", "--db", f"sqlite:///{work / 'data' / 'mvp.sqlite'}",
            "--n", 4, "--m", 2, "--l", 2, "--per-video", 2, "--fps", 1, "--seed", 11, "--quiet", timeout=900)
    return work / "data" / "puzzles.jsonl"


def _records(puzzles: Path) -> list[dict]:
    return [json.loads(x) for x in puzzles.read_text().splitlines() if x.strip()]


# ---- the workers (one process each) --------------------------------------------------------------

def _trl_dataset(puzzles: Path, sft: bool):
    from datasets import Dataset, Image, Sequence

    from mvp_core.export.formats import trl_row
    from mvp_core.train.sft import target_text
    rows = []
    for i, rec in enumerate(_records(puzzles)):
        row = trl_row(rec, i, "", lambda u: str(puzzles.parent / u))
        if sft:     # the studio's SFT target for the same puzzle, so both learn the same tokens
            row["completion"] = [{"role": "assistant", "content": target_text(rec, "short")}]
        rows.append(row)
    return Dataset.from_list(rows).cast_column("images", Sequence(Image()))


class _StepClock:
    """A TrainerCallback's two hooks: seconds of each optimizer step."""

    def __init__(self):
        self.steps: list[float] = []
        self._t = 0.0

    def on_step_begin(self, args, state, control, **kw):
        self._t = time.perf_counter()

    def on_step_end(self, args, state, control, **kw):
        self.steps.append(time.perf_counter() - self._t)


def worker_trl(kind: str, puzzles: Path, out: Path, group: int, prompts: int, steps: int) -> dict:
    import torch
    from transformers import AutoModelForImageTextToText, AutoProcessor, TrainerCallback

    from mvp_core.train.model_setup import find_visual

    torch.set_num_threads(1)
    torch.manual_seed(0)
    clock = _StepClock()
    cb = type("StepClock", (TrainerCallback,), {"on_step_begin": clock.on_step_begin, "on_step_end": clock.on_step_end})()
    model = AutoModelForImageTextToText.from_pretrained(MODEL)
    # the vision tower frozen as the studio's `freeze_vision=true` freezes it: both train the same weights
    # (TRL has no such setting; its trainers optimise whatever requires grad)
    find_visual(model).requires_grad_(False)
    processor = AutoProcessor.from_pretrained(MODEL)
    common = dict(output_dir=str(out), max_steps=steps, learning_rate=LR, lr_scheduler_type="constant",
                  report_to=[], save_strategy="no", logging_steps=1, use_cpu=True, bf16=False,
                  dataloader_num_workers=0, seed=0, max_grad_norm=1.0)
    if kind == "grpo":
        from trl import GRPOConfig, GRPOTrainer

        from mvp_core.export.logged_reward import mvp_reward
        args = GRPOConfig(per_device_train_batch_size=group * prompts, num_generations=group,
                          max_completion_length=COMPLETION_TOKENS, temperature=1.0, beta=0.0, loss_type="dapo",
                          scale_rewards="group", **common)
        trainer = GRPOTrainer(model=model, reward_funcs=[mvp_reward], args=args,
                              train_dataset=_trl_dataset(puzzles, sft=False), processing_class=processor,
                              callbacks=[cb])
    else:
        from trl import SFTConfig, SFTTrainer
        args = SFTConfig(per_device_train_batch_size=prompts, completion_only_loss=True, **common)
        trainer = SFTTrainer(model=model, args=args, train_dataset=_trl_dataset(puzzles, sft=True),
                             processing_class=processor, callbacks=[cb])
    trainer.train()
    lengths = [h["completions/mean_length"] for h in trainer.state.log_history if "completions/mean_length" in h]
    return ({"steps": clock.steps, "lengths": lengths, "processes": trainer.accelerator.num_processes}
            if trainer.accelerator.is_main_process else None)


def worker_studio(kind: str, puzzles: Path, out: Path, group: int, prompts: int, steps: int,
                  share_prompt: bool, processes: int) -> dict:
    common = [f"model={MODEL}", f"puzzles={puzzles}", f"output_dir={out}", f"max_steps={steps}",
              f"save_steps={steps}", "save_total_limit=1", f"learning_rate={LR}", "lr_scheduler_type=constant",
              "freeze_vision=true", "max_grad_norm=1.0"]
    if kind == "grpo":
        argv = ["train", *common, f"num_generations={group}", f"per_device_train_batch_size={group * prompts}",
                f"logprob_batch_size={group * prompts}", f"max_completion_length={COMPLETION_TOKENS}",
                "temperature=1.0", "beta=0.0", "loss_type=dapo", "scale_rewards=group", "save_completions=false",
                f"share_prompt={str(share_prompt).lower()}"]
    else:
        argv = ["sft", *common, f"per_device_train_batch_size={prompts}", "target=short"]
    launch = ([str(BIN / "torchrun"), "--standalone", "--nproc_per_node", str(processes)] if processes > 1
              else [sys.executable])
    r = subprocess.run([*launch, "-m", "app.cli", *argv], cwd=ROOT, env=_env(), capture_output=True,
                       text=True, timeout=3600)
    if r.returncode != 0:
        raise SystemExit(f"mvp {argv[0]} failed: {(r.stderr or r.stdout).strip().splitlines()[-1:]}")
    rows = [json.loads(x) for x in (out / "metrics.jsonl").read_text().splitlines() if x.strip()]
    import yaml
    world = yaml.safe_load((out / "config.yaml").read_text())["run_info"]["world_size"]
    return {"steps": [m["step_s"] for m in rows if "step_s" in m],
            "lengths": [m["completion_length"] for m in rows if "completion_length" in m], "processes": world}


# ---- the driver ----------------------------------------------------------------------------------

def run_one(cfg: dict, puzzles: Path, work: Path, steps: int, prompts: int) -> dict:
    """One configuration in its own process: its step times and its peak RSS (MiB, from wait4)."""
    out = Path(tempfile.mkdtemp(dir=work, prefix=f"{cfg['name']}-"))
    res = out / "steps.json"
    worker = [__file__, "--worker", json.dumps(cfg), "--puzzles", str(puzzles), "--out", str(out),
              "--steps", str(steps), "--prompts", str(prompts), "--result", str(res)]
    if cfg["engine"] == "trl" and cfg["processes"] > 1:
        cmd = [str(BIN / "accelerate"), "launch", "--multi_gpu", "--num_processes", str(cfg["processes"]),
               "--num_machines", "1", "--mixed_precision", "no", "--dynamo_backend", "no", *worker]
    else:       # the studio's worker starts its own torchrun (worker_studio)
        cmd = [sys.executable, *worker]
    p = subprocess.Popen(cmd, cwd=ROOT, env=_env(), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    err = p.stderr.read()
    _, status, usage = os.wait4(p.pid, 0)
    if status != 0 or not res.is_file():
        raise SystemExit(f"{cfg['name']} failed: {err.strip().splitlines()[-3:]}")
    got = json.loads(res.read_text())
    if got.get("processes") != cfg["processes"]:
        raise SystemExit(f"{cfg['name']} ran {got.get('processes')} process(es), not {cfg['processes']}")
    # ru_maxrss: the largest of the worker and the children it waited for (the studio runs in a child)
    return {**got, "rss_mib": usage.ru_maxrss / 1024}


def configs(groups: list[int], processes: list[int], unshared: bool) -> list[dict]:
    out = []
    for g in groups:
        for n in processes:
            tail = f"-p{n}" if n > 1 else ""
            grpo = {"kind": "grpo", "group": g, "processes": n}
            out.append({**grpo, "name": f"grpo-G{g}-studio{tail}", "engine": "studio", "share_prompt": True})
            if unshared:
                out.append({**grpo, "name": f"grpo-G{g}-studio-unshared{tail}", "engine": "studio",
                            "share_prompt": False})
            out.append({**grpo, "name": f"grpo-G{g}-trl{tail}", "engine": "trl"})
    out += [{"name": "sft-studio", "kind": "sft", "engine": "studio", "group": 1, "processes": 1},
            {"name": "sft-trl", "kind": "sft", "engine": "trl", "group": 1, "processes": 1}]
    return out


def peer_of(name: str) -> str | None:
    """The TRL configuration a studio one is compared with (same kind, G and processes)."""
    if "-studio" not in name:
        return None
    return name.replace("-studio-unshared", "-trl").replace("-studio", "-trl")


def _load() -> str:
    return " ".join(Path("/proc/loadavg").read_text().split()[:3])


def _mean(xs: list[float]) -> float:
    return sum(xs) / len(xs) if xs else float("nan")


def _median_after_warmup(xs: list[float]) -> float:
    return statistics.median(xs[1:] if len(xs) > 1 else xs)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--groups", default="2,4,8,16", help="GRPO group sizes G (comma-separated)")
    ap.add_argument("--processes", default="1", help="process counts to run each GRPO pair with (e.g. 1,2)")
    ap.add_argument("--unshared", action="store_true", help="also the studio with share_prompt=false")
    ap.add_argument("--prompts", type=int, default=2, help="puzzles per optimizer step")
    ap.add_argument("--steps", type=int, default=4, help="optimizer steps per run (the first is warm-up)")
    ap.add_argument("--repeats", type=int, default=3, help="runs of each configuration, interleaved")
    ap.add_argument("--work", type=Path, help="keep the work here (default: a temporary folder)")
    ap.add_argument("--json", type=Path, help="also write the table as JSON")
    ap.add_argument("--worker", help=argparse.SUPPRESS)
    ap.add_argument("--puzzles", type=Path, help=argparse.SUPPRESS)
    ap.add_argument("--out", type=Path, help=argparse.SUPPRESS)
    ap.add_argument("--result", type=Path, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.worker:
        cfg = json.loads(args.worker)
        if cfg["engine"] == "trl":
            steps = worker_trl(cfg["kind"], args.puzzles, args.out, cfg["group"], args.prompts, args.steps)
        else:
            steps = worker_studio(cfg["kind"], args.puzzles, args.out, cfg["group"], args.prompts, args.steps,
                                  cfg.get("share_prompt", True), cfg["processes"])
        if steps is not None:       # under accelerate only the main process reports
            args.result.write_text(json.dumps(steps))
        return 0
    work = args.work or Path(tempfile.mkdtemp(prefix="peer-trl-"))
    work.mkdir(parents=True, exist_ok=True)
    puzzles = make_puzzles(work)
    print(f"{len(_records(puzzles))} puzzles; {args.prompts} per step per process, {args.steps} steps, "
          f"{args.repeats} repeats; load average {_load()}",
          flush=True)
    cfgs = configs([int(g) for g in args.groups.split(",")], [int(n) for n in args.processes.split(",")],
                   args.unshared)
    runs: dict[str, list[dict]] = {c["name"]: [] for c in cfgs}
    for rep in range(args.repeats):
        for c in cfgs:
            r = run_one(c, puzzles, work, args.steps, args.prompts)
            runs[c["name"]].append(r)
            print(f"  repeat {rep + 1} {c['name']}: median step {_median_after_warmup(r['steps']):.2f} s, "
                  f"completion {_mean(r['lengths']):.1f} tokens, RSS {r['rss_mib']:.0f} MiB", flush=True)
    table = {}
    for name, rs in runs.items():
        meds = [_median_after_warmup(r["steps"]) for r in rs]
        table[name] = {"step_s": statistics.median(meds), "step_s_min": min(meds), "step_s_max": max(meds),
                       "rss_mib": statistics.median(r["rss_mib"] for r in rs),
                       "completion_tokens": _mean([x for r in rs for x in r["lengths"]])}
    print(f"\n{'configuration':28} {'s/step':>8} {'spread':>15} {'tokens':>7} {'RSS MiB':>8} {'vs TRL':>7} {'RSS vs TRL':>10}")
    for name, t in table.items():
        peer = peer_of(name)
        ratio = f"{t['step_s'] / table[peer]['step_s']:.2f}x" if peer in table else ""
        rss = f"{t['rss_mib'] / table[peer]['rss_mib']:.2f}x" if peer in table else ""
        print(f"{name:28} {t['step_s']:8.2f} [{t['step_s_min']:5.2f}, {t['step_s_max']:5.2f}] "
              f"{t['completion_tokens']:7.1f} {t['rss_mib']:8.0f} {ratio:>7} {rss:>10}")
    print(f"load average: {_load()}")
    if args.json:
        args.json.write_text(json.dumps(table, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

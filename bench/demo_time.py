"""The README's first command, timed: `scripts/demo.sh --no-serve` on a new data directory (sample
videos, synthesis, audit, the tiny models' answers, the demo's GRPO run), this tree beside an older one
(`--compare OLD_TREE`, e.g. `git worktree add DIR COMMIT`), interleaved (A B A B ...) so a noisy machine
slows both alike. Prints each run's wall seconds and CPU seconds (the script and every process under it),
the medians, the ratio to the old tree, and each run's demo table line for the GRPO model (the same
recipe must give comparable numbers).

Both trees run in one environment (VENV, default this tree's .venv), so its setup step must find it
installed for both: the bench refuses a tree whose requirements differ from this one's (demo.sh would
reinstall the environment for it).

With `--answers DATA` (a data directory a finished demo left) it times the demo's last step alone, the
four models' answers on their puzzles: as four `mvp rollout` processes (app/cli/demo_trained.py `_mvp`
each, the way before) beside all four in one process (`_mvp_each`, the way now), interleaved, each under
new run names; the whole demo's time swings with the machine more than that step differs.

Usage: .venv/bin/python bench/demo_time.py [--compare OLD_TREE] [--repeats 2] [--answers DATA]"""
from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PINS = ("requirements.txt", "requirements-dev.txt", "pyproject.toml", "setup.py")


def pins(tree: Path) -> bytes:
    return b"".join((tree / name).read_bytes() for name in PINS)


def run_demo(tree: Path, data: Path, venv: Path, log: Path) -> tuple[float, float, str]:
    """(wall s, CPU s, the table's GRPO line) of one demo on a new data directory."""
    t0 = time.monotonic()
    with open(log, "w") as out:
        p = subprocess.Popen(["scripts/demo.sh", "--no-serve"], cwd=tree, stdout=out, stderr=subprocess.STDOUT,
                             env=dict(os.environ, VENV=str(venv), MVP_DATA_DIR=str(data)))
        _, status, usage = os.wait4(p.pid, 0)
    wall = time.monotonic() - t0
    if status != 0:
        raise SystemExit(f"the demo of {tree} failed; its log: {log}")
    grpo = next((x for x in log.read_text().splitlines() if x.startswith("| GRPO from")), "(no GRPO line)")
    return wall, usage.ru_utime + usage.ru_stime, grpo


def time_answers(data: Path, repeats: int) -> None:
    """The demo's answers step, one process per model against one process for all (module docstring)."""
    sys.path.insert(0, str(ROOT))
    from app.cli import demo_trained as d
    url = f"sqlite:///{data / 'mvp.sqlite'}"
    checkpoint = d.RunDir(data / "runs" / "demo-grpo").latest_checkpoint()[1]
    todo = [(d.WARM_START, data / "demo-trained" / "own-shape.jsonl")] + [
        (m, data / "demo-trained" / "heldout.jsonl") for m in (data / "models" / "tiny-learn-base", d.WARM_START,
                                                                checkpoint)]

    def commands(tag: str) -> list[tuple]:
        return [d.rollout_command(m, puzzles, data, url, f"bench-{tag}-{i}", 4, 12)
                for i, (m, puzzles) in enumerate(todo)]
    ways = {"a process each": lambda tag: [d._mvp(*c) for c in commands(tag)],
            "one process": lambda tag: d._mvp_each(commands(tag))}
    got: dict[str, list[float]] = {}
    for r in range(repeats):
        for name, run in ways.items():
            t0 = time.monotonic()
            run(f"{time.time_ns()}")
            got.setdefault(name, []).append(time.monotonic() - t0)
            print(f"  repeat {r + 1} {name}: {got[name][-1]:.1f} s", flush=True)
    base = statistics.median(got["a process each"])
    print(f"\nthe demo's answers step (4 models x 12 puzzles x G=4), medians of {repeats}:")
    for name, xs in got.items():
        print(f"  {name:16s} {statistics.median(xs):6.1f} s ({statistics.median(xs) / base:.2f}x)")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--compare", type=Path, help="an older tree whose demo runs beside this one's")
    ap.add_argument("--repeats", type=int, default=2)
    ap.add_argument("--venv", type=Path, default=ROOT / ".venv")
    ap.add_argument("--answers", type=Path, help="a finished demo's data directory: time its answers step alone")
    a = ap.parse_args()
    if a.answers:
        time_answers(a.answers.resolve(), a.repeats)
        return 0
    trees = {"current": ROOT, **({"old": a.compare.resolve()} if a.compare else {})}
    for tree in trees.values():
        if pins(tree) != pins(ROOT):
            raise SystemExit(f"{tree}: its requirements differ from this tree's; demo.sh would reinstall {a.venv}")
    got: dict[str, list[tuple[float, float, str]]] = {}
    with tempfile.TemporaryDirectory() as td:
        for r in range(a.repeats):
            for name, tree in trees.items():
                data = Path(td) / f"{name}-{r}"
                got.setdefault(name, []).append(run_demo(tree, data, a.venv, Path(td) / f"{name}-{r}.log"))
                wall, cpu, grpo = got[name][-1]
                print(f"  repeat {r + 1} {name}: {wall:.1f} s wall, {cpu:.1f} s CPU; {grpo}", flush=True)
    base = statistics.median(w for w, _, _ in got.get("old", got["current"]))
    print("\nthe demo (`scripts/demo.sh --no-serve`, a new data directory), medians of", a.repeats, "runs:")
    for name, runs in got.items():
        wall, cpu = statistics.median(w for w, _, _ in runs), statistics.median(c for _, c, _ in runs)
        print(f"  {name:8s} {wall:6.1f} s wall ({wall / base:.2f}x the old tree's), {cpu:6.1f} s CPU")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""The demo's closing table (README, "The two commands"): puzzles made from each sample video, the shortcut
audit's best solver, and each stored model's exact match and mean reward with 95% intervals that resample
videos, the numbers the Rollouts page shows per answer."""
from __future__ import annotations

import json
from pathlib import Path

from sqlalchemy import func, select

from db.models import Puzzle, SynthFile, Video
from db.models.runs import Run
from db.runs.scores import answer_columns
from mvp_core.stats.bootstrap import cluster_mean_ci


def summary(Session, data: Path, runs: list[tuple[str, str]], generated: list[Path]) -> str:
    """The table as text; videos under a folder of `generated` (the clock videos) are not sample footage."""
    lines = ["", "demo summary", "", "| sample video | puzzles |", "| --- | --- |"]
    with Session() as s:
        per_video = s.execute(select(Video.path, func.count(Puzzle.id))
                              .join(Puzzle, Puzzle.video_id == Video.id, isouter=True)
                              .group_by(Video.path).order_by(Video.path)).all()
        real = [(p, n) for p, n in per_video if not any(Path(p).resolve().is_relative_to(g.resolve()) for g in generated)]
        for path, n in real:
            lines.append(f"| {Path(path).name} | {n} |")
        done = {p for p, _ in per_video}
        for path, reason in _skipped(s, generated):
            if path not in done:
                lines.append(f"| {Path(path).name} | 0: {reason} |")
        lines.append(f"| all real footage | {sum(n for _, n in real)} |")
        audit = data / "audit.json"
        if audit.is_file():
            solvers = json.loads(audit.read_text())["groups"]["all"]["solvers"]
            name, best = max(solvers.items(), key=lambda kv: kv[1]["mean_reward"])
            lines += ["", f"shortcut audit (the puzzles in the store at `mvp audit`): best solver {name}, mean reward "
                          f"{best['mean_reward']:.3f}, exact {best['exact']:.3f}"]
        lines += ["", "| model (held-out puzzles, sampled answers) | answers | videos | exact match | mean reward |",
                  "| --- | --- | --- | --- | --- |"]
        for run_id, label in runs:
            if s.get(Run, run_id) is None:
                continue
            total, exact, videos = answer_columns(s, run_id)
            r, e = cluster_mean_ci(total, videos), cluster_mean_ci(exact, videos)
            lines.append(f"| {label} | {r.n} | {r.clusters} | {e.fmt()} | {r.fmt()} |")
    lines.append("(intervals: 95%, resampling videos; mvp_core/stats/bootstrap.py)")
    return "\n".join(lines)


def _skipped(s, generated: list[Path]) -> list[tuple[str, str]]:
    """Sample videos `mvp synth` skipped, with its reason (the newest per file): the skip names the
    setting that would admit the video, or says that none does."""
    rows = s.execute(select(SynthFile.path, SynthFile.reason).where(SynthFile.status == "skipped")
                     .order_by(SynthFile.created_at)).all()
    latest = {p: r for p, r in rows if not any(Path(p).resolve().is_relative_to(g.resolve()) for g in generated)}
    return sorted(latest.items())

"""What the benchmarks and the load tests share: a source data directory synthesized from two sample
videos, latency percentiles and summaries, a process's CPU time, and the machine's load average to
print beside a result."""
from __future__ import annotations

import os
import shutil
import statistics
import sys
from pathlib import Path

from testkit.cli import ROOT


def synth_source(tmp: Path) -> Path:
    """TMP/src: `mvp synth` over bigbuckbunny and bikes, 3 puzzles a video."""
    if str(ROOT / "scripts") not in sys.path:
        sys.path.insert(0, str(ROOT / "scripts"))
    import sample_videos as sv
    vids = {p.stem: p for p in sv.fetch()}
    vdir, data = tmp / "videos", tmp / "src"
    vdir.mkdir()
    for name in ("bigbuckbunny", "bikes"):
        shutil.copy(vids[name], vdir / f"{name}.mp4")
    from testkit.cli import run_mvp
    run_mvp("synth", vdir, "--data", data, "--per-video", "3", "--quiet", timeout=1800)
    return data


def percentile(xs: list[float], q: float) -> float:
    """The nearest-rank q-quantile (q = 0.95: p95); NaN for no values."""
    xs = sorted(xs)
    return xs[min(len(xs) - 1, max(0, int(round(q * len(xs))) - 1))] if xs else float("nan")


def summary(xs: list[float]) -> dict:
    """n, median, p95 and max of latencies in milliseconds."""
    return {"n": len(xs), "median_ms": round(statistics.median(xs), 1), "p95_ms": round(percentile(xs, 0.95), 1),
            "max_ms": round(max(xs), 1)} if xs else {"n": 0}


def load_avg() -> str:
    return " ".join(Path("/proc/loadavg").read_text().split()[:3])


def cpu_seconds(pid: int) -> float:
    """A process's CPU time so far (user + system, from /proc), in seconds; OSError once it is gone."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

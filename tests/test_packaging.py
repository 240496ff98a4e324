"""The installed package is self-contained (docs/ARCHITECTURE.md, "Dependencies"): the wheel built from
the checkout, installed into a fresh environment and run from a folder outside the checkout, serves the
login page and its static files, and finds the shipped configs and warm start through the package."""
from __future__ import annotations

import shutil
import subprocess
import sys
import sysconfig
import time
import urllib.request
import zipfile
from pathlib import Path

from fixtures_web import free_port

ROOT = Path(__file__).resolve().parent.parent


def _get(url: str) -> tuple[int, bytes]:
    with urllib.request.urlopen(url, timeout=10) as r:
        return r.status, r.read()


def test_the_wheel_serves_from_a_fresh_environment(tmp_path):
    src = tmp_path / "src"            # a copy: building in the checkout would leave build/ behind
    for name in ("app", "db", "mvp_core", "static", "configs", "assets"):
        shutil.copytree(ROOT / name, src / name, ignore=shutil.ignore_patterns("__pycache__"))
    for name in ("pyproject.toml", "setup.py", "README.md"):
        shutil.copy(ROOT / name, src / name)
    wheels = tmp_path / "wheels"
    subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation", "-w", str(wheels),
                    str(src)], check=True, capture_output=True)
    (wheel,) = wheels.glob("mvp_studio-*.whl")
    # every template, script and style of a code package travels in the wheel (a page package's own files too)
    shipped = set(zipfile.ZipFile(wheel).namelist())
    for top in ("app", "db", "mvp_core"):
        for f in (ROOT / top).rglob("*"):
            if f.suffix in (".html", ".js", ".css"):
                assert str(f.relative_to(ROOT)) in shipped, f"{f.relative_to(ROOT)} is missing from the wheel"
    for folder in ("static", "configs"):
        for f in (ROOT / folder).iterdir():
            if f.is_file():
                assert f"mvp_files/{folder}/{f.name}" in shipped, f"{folder}/{f.name} is missing from the wheel"
    env_dir = tmp_path / "env"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(env_dir)], check=True)
    py = env_dir / "bin" / "python"
    site = Path(subprocess.run([py, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                               check=True, capture_output=True, text=True).stdout.strip())
    # Reuse the pinned third-party packages already installed (no download); a .pth line only extends
    # sys.path, so the checkout's editable hook in that folder is not run and the wheel's copy is imported.
    (site / "reuse_pinned.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    subprocess.run([sys.executable, "-m", "pip", "--python", str(py), "install", "-q", "--no-deps", "--no-index",
                    str(wheel)], check=True, capture_output=True)
    away = tmp_path / "elsewhere"
    away.mkdir()
    where = subprocess.run(
        [py, "-c", "import app, mvp_core.resources as r; print(app.__file__); "
                   "print(r.folder('static')); print(r.config('web.yaml').is_file(), (r.warm_start() / 'config.json').is_file())"],
        cwd=away, check=True, capture_output=True, text=True).stdout.split("\n")
    assert where[0].startswith(str(site)), f"app imported from {where[0]}, not the installed wheel"
    assert where[1].startswith(str(site)), f"static/ found at {where[1]}, not in the installed package"
    assert where[2] == "True True"
    port = free_port()
    log = (tmp_path / "serve.log").open("w")
    proc = subprocess.Popen([env_dir / "bin" / "mvp", "serve", "--data", str(tmp_path / "data"), "--port", str(port)],
                            cwd=away, stdout=log, stderr=subprocess.STDOUT)
    try:
        status = None
        for _ in range(600):                      # the server's start, polled (no wall-clock assertion)
            if proc.poll() is not None:
                break
            try:
                status, body = _get(f"http://127.0.0.1:{port}/login")
                break
            except OSError:
                time.sleep(0.2)
        assert status == 200, (tmp_path / "serve.log").read_text()[-2000:]
        assert b"<form" in body.lower() or b"password" in body.lower()
        status, css = _get(f"http://127.0.0.1:{port}/static/studio.css")
        assert status == 200 and css == (ROOT / "static" / "studio.css").read_bytes()
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def test_the_reward_imports_from_a_bare_install(tmp_path):
    """The light install beside another trainer (verl, EasyR1, LLaMA-Factory pin other transformers):
    `pip install --no-deps mvp-studio` into an environment with no third-party package at all, and the
    project's reward still imports and scores (mvp_core/reward.py is pure Python)."""
    wheels = tmp_path / "wheels"
    subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation", "-w", str(wheels),
                    str(ROOT)], check=True, capture_output=True)
    (wheel,) = wheels.glob("mvp_studio-*.whl")
    env_dir = tmp_path / "bare"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(env_dir)], check=True)
    py = env_dir / "bin" / "python"
    subprocess.run([sys.executable, "-m", "pip", "--python", str(py), "install", "-q", "--no-deps", "--no-index",
                    str(wheel)], check=True, capture_output=True)
    code = ("import sys, mvp_core.reward as r; "
            "bad = [m for m in ('torch', 'numpy', 'transformers', 'pydantic') if m in sys.modules]; "
            "pool = ['A', 'B', 'C', 'D']; "
            "print(bad, r.score_prediction(['A', 'C'], ['A', 'C'], pool).exact, "
            "r.score_prediction(['C', 'A'], ['A', 'C'], pool).exact, r.__file__)")
    out = subprocess.run([py, "-c", code], cwd=tmp_path, capture_output=True, text=True)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.startswith("[] 1.0 0.0 ") and str(env_dir) in out.stdout, out.stdout

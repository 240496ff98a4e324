"""The installed package is self-contained (docs/ARCHITECTURE.md, "Dependencies"): the wheel built from
the checkout, installed into a fresh environment and run from a folder outside the checkout, serves the
login page and its static files, carries every shipped config and file (subfolders too) and trains on a
shipped config named by its short name."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
import urllib.request
import zipfile
from pathlib import Path

import pytest
import yaml
from fixtures_web import free_port

ROOT = Path(__file__).resolve().parent.parent
DATA_FOLDERS = ("static", "configs", "assets")


def _get(url: str) -> tuple[int, bytes]:
    with urllib.request.urlopen(url, timeout=10) as r:
        return r.status, r.read()


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    """The wheel, built once from a copy of the checkout (building in the checkout would leave build/ behind)."""
    tmp = tmp_path_factory.mktemp("wheel")
    src = tmp / "src"
    for name in ("app", "db", "mvp_core", *DATA_FOLDERS):
        shutil.copytree(ROOT / name, src / name, ignore=shutil.ignore_patterns("__pycache__"))
    for name in ("pyproject.toml", "setup.py", "README.md"):
        shutil.copy(ROOT / name, src / name)
    out = subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation",
                          "-w", str(tmp / "wheels"), str(src)], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr[-3000:]
    (built,) = (tmp / "wheels").glob("mvp_studio-*.whl")
    return built


def _fresh_env(where: Path, wheel: Path, *, reuse_installed: bool) -> Path:
    """A new venv with the wheel installed (no dependency resolved); with `reuse_installed` it also sees
    the pinned third-party packages already installed here (no download): a .pth line only extends
    sys.path, so the checkout's editable hook in those folders is not run and the wheel's copy is imported."""
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(where)], check=True)
    py = where / "bin" / "python"
    if reuse_installed:
        site = Path(subprocess.run([py, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                                   check=True, capture_output=True, text=True).stdout.strip())
        (site / "reuse_pinned.pth").write_text(
            "".join(p + "\n" for p in sys.path if p.endswith("site-packages") and Path(p).is_dir()))
    subprocess.run([sys.executable, "-m", "pip", "--python", str(py), "install", "-q", "--no-deps", "--no-index",
                    str(wheel)], check=True, capture_output=True)
    return where


@pytest.fixture(scope="module")
def installed(tmp_path_factory, wheel) -> Path:
    """A fresh venv holding the wheel, beside the installed third-party packages."""
    return _fresh_env(tmp_path_factory.mktemp("installed") / "env", wheel, reuse_installed=True)


def test_the_wheel_holds_every_shipped_file(wheel):
    """Every template, script and style of a code package, and every file of static/, configs/ and assets/
    at any depth (configs/verl/ is a subfolder), is in the wheel."""
    shipped = set(zipfile.ZipFile(wheel).namelist())
    missing = []
    for top in ("app", "db", "mvp_core"):
        for f in (ROOT / top).rglob("*"):
            if f.suffix in (".html", ".js", ".css") and str(f.relative_to(ROOT)) not in shipped:
                missing.append(str(f.relative_to(ROOT)))
    for folder in DATA_FOLDERS:
        for f in (ROOT / folder).rglob("*"):
            if f.is_file() and "__pycache__" not in f.parts \
                    and f"mvp_files/{f.relative_to(ROOT).as_posix()}" not in shipped:
                missing.append(str(f.relative_to(ROOT)))
    assert not missing, f"missing from the wheel: {missing}"
    assert "mvp_files/configs/verl/mvp-grpo-qwen25vl.yaml" in shipped


@pytest.mark.serve
def test_the_wheel_serves_from_a_fresh_environment(installed, tmp_path):
    env_dir = installed
    py = env_dir / "bin" / "python"
    site = Path(subprocess.run([py, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                               check=True, capture_output=True, text=True).stdout.strip())
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


def test_the_reward_imports_from_a_bare_install(wheel, tmp_path):
    """The reward and export side beside another trainer (verl, EasyR1, LLaMA-Factory pin other
    transformers): the package without its [studio] extra, in an environment with no third-party package
    at all, imports the reward and the engines' export and reward modules and scores; the studio's
    commands there say in one line which extra they need."""
    env_dir = _fresh_env(tmp_path / "bare", wheel, reuse_installed=False)
    py = env_dir / "bin" / "python"
    alone = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}      # nothing but the bare venv
    code = ("import sys, mvp_core.reward as r; "
            "bad = [m for m in ('torch', 'numpy', 'transformers', 'pydantic') if m in sys.modules]; "
            "pool = ['A', 'B', 'C', 'D']; "
            "print(bad, r.score_prediction(['A', 'C'], ['A', 'C'], pool).exact, "
            "r.score_prediction(['C', 'A'], ['A', 'C'], pool).exact, r.__file__)")
    out = subprocess.run([py, "-c", code], cwd=tmp_path, env=alone, capture_output=True, text=True)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.startswith("[] 1.0 0.0 ") and str(env_dir) in out.stdout, out.stdout
    code = ("import sys, mvp_core.export.formats, mvp_core.export.reward_fn, mvp_core.export.logged_reward; "
            "print(sorted({m.split('.')[0] for m in sys.modules} - set(sys.stdlib_module_names) "
            "- {'mvp_core', '__main__'}))")
    out = subprocess.run([py, "-c", code], cwd=tmp_path, env=alone, capture_output=True, text=True)
    assert out.returncode == 0 and out.stdout.strip() == "[]", out.stderr[-2000:] + out.stdout
    out = subprocess.run([env_dir / "bin" / "mvp", "train", "tiny"], cwd=tmp_path, env=alone, capture_output=True,
                         text=True)
    assert out.returncode == 2 and "pip install 'mvp-studio[studio]'" in out.stderr, out.stderr[-2000:]
    assert len(out.stderr.strip().splitlines()) == 1


@pytest.mark.slow
def test_a_shipped_config_trains_by_name_outside_the_checkout(installed, tiny_model_dir, model_data, tmp_path):
    """`mvp train tiny` in a folder outside the checkout: the installed package's configs/tiny.yaml (its
    reward and loss, which are not the defaults) trains the tiny model for two steps; a name that is no
    file and no shipped config is one line that lists the shipped ones."""
    data, _ = model_data
    away = tmp_path / "elsewhere"
    away.mkdir()
    mvp = installed / "bin" / "mvp"
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "OMP_NUM_THREADS": "1", "PYTHONUNBUFFERED": "1"}
    out = subprocess.run([mvp, "train", "tiny", f"model={tiny_model_dir}", f"puzzles={data / 'puzzles.jsonl'}",
                          "output_dir=run", "max_steps=2", "save_steps=2", "max_completion_length=8",
                          "num_generations=2", "per_device_train_batch_size=2", "gradient_accumulation_steps=1"],
                         cwd=away, env=env, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stdout[-2000:] + out.stderr[-3000:]
    used = yaml.safe_load((away / "run" / "config.yaml").read_text())
    assert (used["reward"], used["loss_type"], used["lr_scheduler_type"]) == ("mentions_label", "dapo", "constant")
    steps = [json.loads(x)["step"] for x in (away / "run" / "metrics.jsonl").read_text().splitlines()
             if x.strip() and "step" in json.loads(x)]
    assert max(steps) == 2
    out = subprocess.run([mvp, "train", "tiny.yml"], cwd=away, env=env, capture_output=True, text=True)
    assert out.returncode == 2 and "tiny.yml" in out.stderr and "tiny, web, web-sft)" in out.stderr, out.stderr
    assert "Traceback" not in out.stderr


def _peer_pins(overlay: str) -> list[str]:
    """requirements-peers.txt's exact pins of one overlay (`<overlay> <pin>` lines)."""
    lines = (ROOT / "requirements-peers.txt").read_text().splitlines()
    return [x.split()[1] for x in lines if x.strip() and not x.startswith("#") and x.split()[0] == overlay]


@pytest.mark.slow
def test_the_reward_side_resolves_beside_verls_reward_side(wheel, tmp_path):
    """One environment for the studio's reward and export side (the package without its [studio] extra) and
    verl 0.9.1 with its reward loader's pins (requirements-peers.txt, overlay verl: transformers 5.10.4,
    tokenizers 0.22.2, hydra, omegaconf, ...): pip's own resolver in a fresh venv, a dry run (metadata
    only, nothing installed) that must find one version of everything. The whole studio cannot: verl caps
    transformers below 5.11 and the studio needs 5.24 (docs/install.md)."""
    env_dir = tmp_path / "fresh"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(env_dir)], check=True)
    peers = _peer_pins("verl")
    assert "verl==0.9.1" in peers and "transformers==5.10.4" in peers
    report = tmp_path / "report.json"
    out = subprocess.run([sys.executable, "-m", "pip", "--python", str(env_dir / "bin" / "python"), "install",
                          "--dry-run", "--ignore-installed", "--quiet", "--report", str(report), str(wheel), *peers],
                         capture_output=True, text=True, timeout=900)
    assert out.returncode == 0, out.stderr[-3000:]
    chosen = {x["metadata"]["name"].lower().replace("_", "-"): x["metadata"]["version"]
              for x in json.loads(report.read_text())["install"]}
    assert chosen["mvp-studio"] == "0.1.0" and chosen["verl"] == "0.9.1"
    assert (chosen["transformers"], chosen["tokenizers"]) == ("5.10.4", "0.22.2")
    assert "gradio" not in chosen and "duckdb" not in chosen     # nothing of the studio's own stack came along

"""Dependencies declared once and complete (docs/ARCHITECTURE.md, "Dependencies"): every third-party
module imported under app/, db/, mvp_core/ comes from a distribution that requirements.txt names
directly (a package that only arrives through another one can vanish with that one's next release),
and pyproject's [studio] extra names the same distributions, each exact pin inside its range."""
from __future__ import annotations

import ast
import importlib.metadata as md
import re
import sys
import tomllib
from pathlib import Path

from packaging.requirements import Requirement

ROOT = Path(__file__).resolve().parent.parent
RUNTIME_DIRS = ("app", "db", "mvp_core")
LOCAL = {"app", "db", "mvp_core"}


def _norm(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _pins(path: Path) -> dict[str, Requirement]:
    out = {}
    for line in path.read_text().splitlines():
        line = line.split("#", 1)[0].strip()
        if line and not line.startswith("-"):
            r = Requirement(line)
            out[_norm(r.name)] = r
    return out


def _imports() -> dict[str, str]:
    """Top-level third-party module -> first file importing it."""
    found: dict[str, str] = {}
    for top in RUNTIME_DIRS:
        for p in sorted((ROOT / top).rglob("*.py")):
            for node in ast.walk(ast.parse(p.read_text())):
                if isinstance(node, ast.Import):
                    names = [a.name for a in node.names]
                elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
                    names = [node.module]
                else:
                    continue
                for n in names:
                    mod = n.split(".")[0]
                    if mod not in sys.stdlib_module_names and mod not in LOCAL and mod != "__future__":
                        found.setdefault(mod, str(p.relative_to(ROOT)))
    return found


def test_every_runtime_import_is_a_direct_runtime_requirement():
    declared = set(_pins(ROOT / "requirements.txt"))
    dists = {m: {_norm(d) for d in ds} for m, ds in md.packages_distributions().items()}
    missing = []
    for mod, where in sorted(_imports().items()):
        owners = dists.get(mod, set())
        if not owners & declared:
            missing.append(f"{mod} (imported in {where}; installed by {sorted(owners) or 'nothing'})")
    assert not missing, "runtime imports not named in requirements.txt:\n" + "\n".join(missing)


def test_pyproject_dependencies_match_the_pins():
    """The package alone (the reward and export side) needs nothing; the [studio] extra names the pins."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert project["dependencies"] == []
    ranges = {_norm(Requirement(r).name): Requirement(r) for r in project["optional-dependencies"]["studio"]}
    pins = _pins(ROOT / "requirements.txt")
    assert set(ranges) == set(pins), (f"only in pyproject: {sorted(set(ranges) - set(pins))}; "
                                      f"only in requirements.txt: {sorted(set(pins) - set(ranges))}")
    for name, pin in pins.items():
        (version,) = [s.version for s in pin.specifier if s.operator == "=="]
        assert ranges[name].specifier.contains(version, prereleases=True), \
            f"{name}=={version} is outside pyproject's range {ranges[name].specifier}"
    dev = _pins(ROOT / "requirements-dev.txt")
    test_extra = {_norm(Requirement(r).name): Requirement(r) for r in project["optional-dependencies"]["test"]}
    assert set(test_extra) == set(dev), "pyproject's [test] extra and requirements-dev.txt differ"
    for name, pin in dev.items():
        (version,) = [s.version for s in pin.specifier if s.operator == "=="]
        assert test_extra[name].specifier.contains(version, prereleases=True), name


def test_every_declared_pin_is_what_the_environment_holds():
    """The setup installs exactly the pins: a pin that drifted from the installed version is a stale file."""
    for name, pin in {**_pins(ROOT / "requirements.txt"), **_pins(ROOT / "requirements-dev.txt")}.items():
        (version,) = [s.version for s in pin.specifier if s.operator == "=="]
        assert md.version(name) == version, f"{name}: pinned {version}, installed {md.version(name)}"


def test_the_dockerfile_installs_through_the_setup_script():
    """No Docker engine here: what can be checked is that the image installs the same pins the same way
    as the README's commands (scripts/setup_env.sh runtime), never with its own pip line."""
    text = (ROOT / "Dockerfile").read_text()
    runs = [" ".join(block.split()) for block in re.findall(r"^RUN (.*?)(?<!\\)$", text.replace("\\\n", " "), re.M)]
    installs = [r for r in runs if "pip" in r or "setup_env" in r]
    assert installs, "the Dockerfile installs nothing"
    for r in installs:
        assert "pip install" not in r, f"the Dockerfile installs with its own pip line: {r}"
        assert "scripts/setup_env.sh runtime" in r, r
    copied = " ".join(re.findall(r"^COPY (.*)$", text, re.M))
    for needed in ("requirements.txt", "pyproject.toml", "setup.py", "scripts/setup_env.sh", "static", "configs", "assets"):
        assert needed in copied, f"the Dockerfile does not copy {needed}"


def test_ci_runs_the_demo_in_a_runtime_only_environment_before_the_tests():
    """.ci/run (README, "The two commands"): the demo first, on a fresh data directory, in an environment
    built from requirements.txt alone (not .venv, where the test tools live), then scripts/test.sh."""
    lines = [x.strip() for x in (ROOT / ".ci" / "run").read_text().splitlines() if x.strip() and not x.strip().startswith("#")]
    demo = next(i for i, x in enumerate(lines) if "scripts/demo.sh --no-serve" in x)
    tests = next(i for i, x in enumerate(lines) if "scripts/test.sh" in x)
    assert demo < tests
    venv = re.search(r"VENV=(\S+)", lines[demo])
    assert venv and venv.group(1).rstrip("/") not in (".venv", ""), lines[demo]
    assert 'MVP_DATA_DIR="$data"' in lines[demo] and any(x.startswith('data="$(mktemp -d)"') for x in lines[:demo])
    demo_sh = (ROOT / "scripts" / "demo.sh").read_text()
    assert 'VENV="$V" scripts/setup_env.sh runtime' in demo_sh      # the demo builds its venv from the runtime pins

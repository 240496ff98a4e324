"""The documents stay true (docs/ARCHITECTURE.md): every repository path that ARCHITECTURE.md, the README and
BENCHMARKS.md name exists, and ARCHITECTURE's import direction is the one tests/test_architecture.py enforces."""
from __future__ import annotations

import re
from pathlib import Path

import pytest
from test_architecture import LAYERS

ROOT = Path(__file__).resolve().parent.parent
TOPS = ("app/", "db/", "mvp_core/", "static/", "tests/", "bench/", "scripts/", "configs/", "assets/", "docs/")
# a path-like token in backticks or bare: a known top folder, then path characters
_PATH = re.compile(r"(?<![\w./-])((?:%s)[\w./<>*-]*)" % "|".join(re.escape(t) for t in TOPS))


def _paths(doc: Path) -> set[str]:
    out = set()
    for m in _PATH.finditer(doc.read_text()):
        p = m.group(1).rstrip(".,:;)")
        if any(c in p for c in "<>*") or p.endswith("/..."):
            continue                     # a pattern (pages/<page>.py, bench/gpu_*.py), not one path
        out.add(p.split("#")[0])
    return out


@pytest.mark.parametrize("doc", ["docs/ARCHITECTURE.md", "README.md", "docs/BENCHMARKS.md"])
def test_named_paths_exist(doc):
    missing = sorted(p for p in _paths(ROOT / doc) if not (ROOT / p).exists() and not (ROOT / p.rstrip("/")).exists())
    assert not missing, f"{doc} names paths that do not exist: {missing}"


def test_the_import_direction_is_the_enforced_one():
    """ARCHITECTURE.md's one `layers:` line lists exactly test_architecture's LAYERS, outermost first."""
    lines = [ln.strip() for ln in (ROOT / "docs" / "ARCHITECTURE.md").read_text().splitlines()
             if ln.strip().startswith("layers:")]
    assert len(lines) == 1, f"ARCHITECTURE.md should have one 'layers:' line, has {len(lines)}"
    stated = [x.strip() for x in lines[0].removeprefix("layers:").split("->")]
    assert stated == sorted(LAYERS, key=LAYERS.get, reverse=True), stated


def _imports(path: Path) -> set[str]:
    import ast
    mods = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            mods |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            mods.add(node.module)
    return mods


def test_bench_shares_with_tests_only_through_testkit():
    """bench/ never imports the tests' fixtures (what both need lives in testkit/), testkit imports neither,
    and the shipped packages never import testkit."""
    tests_mods = {p.stem for p in (ROOT / "tests").glob("*.py")}
    bad = [f"{p.relative_to(ROOT)} imports {m}" for p in sorted((ROOT / "bench").glob("*.py"))
           for m in _imports(p) if m.split(".")[0] in tests_mods | {"tests"}]
    bad += [f"{p.relative_to(ROOT)} imports {m}" for p in sorted((ROOT / "testkit").glob("*.py"))
            for m in _imports(p) if m.split(".")[0] in tests_mods | {"tests", "bench"}]
    bad += [f"{p.relative_to(ROOT)} imports {m}" for top in ("app", "db", "mvp_core")
            for p in sorted((ROOT / top).rglob("*.py")) for m in _imports(p) if m.split(".")[0] == "testkit"]
    assert not bad, bad
    on_path = [p.name for p in (ROOT / "bench").glob("*.py") if 'ROOT / "tests"' in p.read_text()]
    assert not on_path, f"bench files put tests/ on sys.path: {on_path}"


def _where_block() -> list[str]:
    text = (ROOT / "README.md").read_text()
    block = text.split("## What is where", 1)[1].split("```", 2)[1]
    return block.splitlines()


def test_readme_what_is_where_names_every_core_package():
    """The README's "What is where" lists mvp_core's packages as they are (train/, not a folder that no
    longer exists), and says where the trainer formats, `mvp import-run`, tracking, scaling and
    steering are."""
    lines, listed, inside = _where_block(), set(), False
    for ln in lines:
        if ln.startswith("mvp_core/"):
            inside = True
        elif ln and not ln.startswith(" "):
            inside = False
        elif inside and (m := re.match(r"^  (\w+)/", ln)):
            listed.add(m.group(1))
    packages = {p.name for p in (ROOT / "mvp_core").iterdir() if (p / "__init__.py").is_file()}
    assert listed == packages, (sorted(listed - packages), sorted(packages - listed))
    from mvp_core.export.formats import FORMATS
    readme = (ROOT / "README.md").read_text()
    for words in ("mvp import-run", "docs/scale.md", "docs/steer.md", "report_to", *FORMATS):
        assert words in readme, words


CODE = ("app", "db", "mvp_core", "static", "scripts", "bench", "testkit", "tests", "configs")
# a comment that cites the tracker or the team's own design file: a reader of the repository has neither
_CITES = re.compile(r"\bissues? #?\d+|\(issue[:,)]|" + "DESIGN" + r"\.md", re.IGNORECASE)


def test_code_says_the_reason_instead_of_citing_issues():
    found = [f"{p.relative_to(ROOT)}:{i}" for top in CODE for p in sorted((ROOT / top).rglob("*"))
             if p.suffix in (".py", ".js", ".css", ".html", ".sh", ".yaml") and p.is_file()
             for i, ln in enumerate(p.read_text(errors="replace").splitlines(), 1) if _CITES.search(ln)]
    assert not found, found

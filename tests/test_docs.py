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
    text = (ROOT / "docs" / "ARCHITECTURE.md").read_text()
    order = sorted(LAYERS, key=LAYERS.get, reverse=True)            # app, db, mvp_core
    assert " -> ".join(order) in text, f"ARCHITECTURE.md should state the direction {' -> '.join(order)}"

"""The test files the xdist scheduler sends to one worker because they share a session studio
(testkit/suite_groups.py) are the files whose collected tests resolve that studio: the source scan
agrees with pytest's own fixture resolution, file by file."""
from __future__ import annotations

import json
import os
import subprocess
import sys

from testkit.suite_groups import DESELECTED, STUDIOS, TESTS, file_groups, studios_from_items, studios_used, unit_of


def _collected(request, tmp_path) -> dict[str, set[str]]:
    """What pytest resolves: from this run's collection when it holds every test file (the whole suite, or
    the fast subset with what its `-m` deselected), else from a collection of tests/ of its own."""
    files = {p.name for p in TESTS.glob("test_*.py")}
    seen = studios_from_items([*request.session.items, *request.config.stash.get(DESELECTED, [])])
    if files <= seen.keys():
        return seen
    out = tmp_path / "studios.json"
    r = subprocess.run([sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider",
                        "-p", "testkit.suite_groups", str(TESTS)], capture_output=True, text=True,
                       cwd=TESTS.parent, env={**os.environ, "MVP_STUDIOS_OUT": str(out)}, timeout=600)
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-2000:]
    return {k: set(v) for k, v in json.loads(out.read_text()).items()}


def test_source_scan_agrees_with_pytest(request, tmp_path):
    truth = _collected(request, tmp_path)
    guessed = {name: studios_used(TESTS / name) for name in truth}
    assert guessed == truth
    assert any(truth.values()) and set().union(*truth.values()) <= set(STUDIOS)


def test_files_of_one_studio_are_one_unit():
    groups = file_groups()
    uses = {name: studios_used(TESTS / name) for name in groups}     # each file parsed once
    for name in groups:
        for studio in uses[name]:
            same = [f for f in groups if studio in uses[f]]
            assert {unit_of(f"tests/{f}::t") for f in same} == {groups[name]}
    assert unit_of("tests/test_docs.py::test_x") == "tests/test_docs.py"      # a file of no studio: itself

"""Which test files share one of the suite's session studios (a `mvp serve` with its data, built once per
pytest process), so that pytest-xdist sends them all to one worker and the studio is built once in a run
instead of once on each worker (tests/conftest.py `pytest_xdist_make_scheduler`).

Found statically, from the test files' own source: xdist's scheduler runs in the controlling process, which
sees node ids only, not the collected tests' fixtures. A file uses a studio when one of its tests or
fixtures names it as a parameter, directly or through the shared fixtures of
tests/fixtures_*.py; a fixture a file defines itself hides a shared one of that name. A wrong guess costs
balance between the workers, never a test: every test still runs, with the fixtures pytest resolves.

Hand-written because xdist's `--dist loadgroup` (its `xdist_group` mark) does not reach the scheduler
with pytest 9 (the group is added to a node id attribute pytest no longer reads), and loadfile groups
by file only."""
from __future__ import annotations

import ast
import os
from functools import lru_cache
from pathlib import Path

import pytest

TESTS = Path(__file__).resolve().parent.parent / "tests"
# config.stash key: the tests this run collected but `-m` / `-k` left out (tests/conftest.py
# `pytest_deselected`), so the whole collection is known without collecting again
DESELECTED = pytest.StashKey[list]()
# the session fixtures that start a server on data of their own (tests/fixtures_web*.py, fixtures_security.py)
STUDIOS = ("web_app", "named_studio", "sec_server", "studio")


def _fixtures(tree: ast.Module) -> dict[str, set[str]]:
    """{fixture name: its parameter names} for the functions decorated with pytest.fixture."""
    out = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef) and any("fixture" in ast.unparse(d) for d in node.decorator_list):
            out[node.name] = {a.arg for a in node.args.args + node.args.kwonlyargs}
    return out


def _parameters(tree: ast.Module, own: dict[str, set[str]]) -> set[str]:
    """The parameter names of the file's tests and fixtures (`own`: a helper's parameters are not fixtures)."""
    tests = {a.arg for node in ast.walk(tree) if isinstance(node, ast.FunctionDef) and node.name.startswith("test")
             for a in node.args.args + node.args.kwonlyargs}
    return tests.union(*own.values())


@lru_cache(maxsize=1)
def _shared(tests: Path) -> dict[str, set[str]]:
    out: dict[str, set[str]] = {}
    for p in [tests / "conftest.py", *sorted(tests.glob("fixtures_*.py"))]:
        out.update(_fixtures(ast.parse(p.read_text(encoding="utf-8"))))
    return out


def studios_used(path: Path, tests: Path = TESTS) -> set[str]:
    """The studios (STUDIOS) the test file at `path` uses, through any chain of shared fixtures."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    own, shared = _fixtures(tree), _shared(tests)
    used, todo, seen = set(), list(_parameters(tree, own)), set()
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        seen.add(name)
        if name in own:          # the file's own fixture of that name, not the shared one
            continue             # (its parameters are already among the file's parameters)
        if name in STUDIOS:
            used.add(name)
        todo.extend(shared.get(name, ()))
    return used


@lru_cache(maxsize=1)
def file_groups(tests: Path = TESTS) -> dict[str, str]:
    """{test file name: its work unit}: the studio it uses ("studio:web_app"), studios used together by
    one file merged into one unit; files using none are absent (each is its own unit)."""
    uses = {p.name: studios_used(p, tests) for p in sorted(tests.glob("test_*.py"))}
    unit = {s: s for s in STUDIOS}          # union-find over studios a file uses together

    def root(s: str) -> str:
        while unit[s] != s:
            s = unit[s]
        return s
    for used in uses.values():
        first, *rest = sorted(used) or [None]
        for s in rest:
            unit[root(s)] = root(first)
    return {name: "studio:" + root(min(used)) for name, used in uses.items() if used}


def unit_of(nodeid: str) -> str:
    """The work unit of a test's node id: its studio's group, else its file (every file its own unit
    with MVP_SUITE_UNITS=files, the plain loadfile split bench/suite_time.py compares against)."""
    path = nodeid.split("::", 1)[0]
    if os.environ.get("MVP_SUITE_UNITS") == "files":
        return path
    return file_groups().get(Path(path).name, path)


def make_scheduler(config, log):
    """pytest-xdist's loadfile scheduler with work units from `unit_of` instead of plain files."""
    from xdist.scheduler import LoadFileScheduling

    class SharedStudioScheduling(LoadFileScheduling):
        def _split_scope(self, nodeid: str) -> str:
            return unit_of(nodeid)
    return SharedStudioScheduling(config, log)


def shared_fixtures(item, names) -> set[str]:
    """Those of `names` that `item` resolves to the shared fixtures of tests/fixtures_*.py (a test module
    may define its own of a name)."""
    defs = item._fixtureinfo.name2fixturedefs      # the fixture a name resolves to for this test
    return {n for n in set(item.fixturenames) & set(names)
            if any(d.func.__module__.startswith("fixtures_") for d in defs.get(n, ())[-1:])}


def studios_from_items(items) -> dict[str, set[str]]:
    """{test file name: the studios its tests resolve}, from collected tests (the truth `studios_used`
    guesses from source)."""
    out: dict[str, set[str]] = {}
    for item in items:
        used = shared_fixtures(item, STUDIOS)
        out.setdefault(Path(item.nodeid.split("::", 1)[0]).name, set()).update(used)
    return out


def pytest_collection_finish(session) -> None:
    """As a plugin (`-p testkit.suite_groups`, with MVP_STUDIOS_OUT=FILE): write `studios_from_items` of
    the collection as JSON (tests/test_suite_groups.py)."""
    import json
    out = os.environ.get("MVP_STUDIOS_OUT")
    if out:
        Path(out).write_text(json.dumps({k: sorted(v) for k, v in studios_from_items(session.items).items()}))

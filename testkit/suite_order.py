"""The order in which the suite's files are handed to pytest-xdist's workers (tests/conftest.py): longest
first, so the last files to start are short ones and both workers end together (the longest-processing-
time-first rule). A file's cost is its measured seconds in testkit/suite_costs.json (a profile's per-file
totals: `pytest -n 2 --dist loadfile --junitxml=OUT`, then `python -m testkit.suite_order OUT`); a file
not listed there is estimated from its tests' markers. Costs only order the files: a stale table costs
balance, never a test."""
from __future__ import annotations

import json
import sys
from collections import defaultdict
from pathlib import Path

COSTS = Path(__file__).with_name("suite_costs.json")
# seconds a test of a file not in the table is guessed to take, by its markers (slow wins over serve)
GUESS_S = {"slow": 30.0, "browser": 8.0, "serve": 4.0}
PLAIN_S = 0.5


def file_costs(items) -> dict[str, float]:
    """{test file's node id: seconds}, measured where the table has the file, else guessed from markers."""
    measured = json.loads(COSTS.read_text()) if COSTS.exists() else {}
    guess: dict[str, float] = defaultdict(float)
    for item in items:
        marks = {m.name for m in item.iter_markers()}
        guess[item.nodeid.split("::")[0]] += next((s for m, s in GUESS_S.items() if m in marks), PLAIN_S)
    return {f: float(measured.get(Path(f).name, g)) for f, g in guess.items()}


def costs_from_junit(path: Path) -> dict[str, float]:
    """{file name: seconds of its tests, setup and teardown included} from pytest's --junitxml report."""
    import xml.etree.ElementTree as ET
    out: dict[str, float] = defaultdict(float)
    for case in ET.parse(path).getroot().iter("testcase"):
        parts = case.get("classname", "").split(".")
        name = next((p for p in parts if p.startswith("test_")), None)
        if name:
            out[name + ".py"] += float(case.get("time") or 0)
    return {k: round(v, 1) for k, v in sorted(out.items(), key=lambda kv: -kv[1])}


if __name__ == "__main__":
    if len(sys.argv) != 2:
        raise SystemExit("usage: python -m testkit.suite_order JUNIT.xml   (rewrites testkit/suite_costs.json)")
    COSTS.write_text(json.dumps(costs_from_junit(Path(sys.argv[1])), indent=1) + "\n")
    print(f"wrote {COSTS}")

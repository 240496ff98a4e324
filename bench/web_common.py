"""What the web benchmarks share: testkit/measure.py (with the load tests), importable from a bench script
run by path; and the sample videos' script (scripts/)."""
from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
for _p in (ROOT, ROOT / "scripts"):     # testkit (what bench shares with tests, never tests/ itself), sample_videos
    if str(_p) not in sys.path:
        sys.path.insert(0, str(_p))

from testkit.measure import load_avg, percentile, summary, synth_source  # noqa: E402,F401

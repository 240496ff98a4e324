"""Bad input gets one line, not a traceback: a config YAML nested thousands deep (the YAML parser
recurses) is refused by `mvp train --print-config` with one line (mvp_core/config.py)."""
from __future__ import annotations

import subprocess
import sys

from fixtures_web import ROOT


def test_deep_yaml_config_is_one_line(tmp_path):
    cfg = tmp_path / "deep.yaml"
    cfg.write_text("learning_rate: " + "[" * 5000 + "]" * 5000 + "\n")
    res = subprocess.run([sys.executable, "-m", "app.cli", "train", str(cfg), "--print-config"], cwd=ROOT,
                         capture_output=True, text=True, timeout=120)
    out = (res.stdout + res.stderr).strip()
    assert "Traceback" not in out and len(out.splitlines()) == 1 and "nests too deeply" in out, out[-500:]

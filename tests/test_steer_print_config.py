"""`mvp steer train|generate|eval --print-config`: the resolved settings, documented, and nothing run."""
from __future__ import annotations

from mvp_core.steer.config import EnergyConfig, SteerConfig


def test_steer_print_config_shows_every_setting_and_runs_nothing(tmp_path, capsys):
    from app.cli import main
    states, out = tmp_path / "missing-states.pt", tmp_path / "bank.pt"
    assert main(["steer", "train", str(states), "--out", str(out), "--print-config", "--epochs", "7",
                 "--eta", "0.95", "--steps", "8", "--positions", "prompt", "--gate", "entry"]) == 0
    text = capsys.readouterr().out
    for key in [*EnergyConfig.model_fields, *SteerConfig.model_fields]:
        assert f"\n{key}: " in text, key
    assert "\nepochs: 7\n" in text and "\neta: 0.95\n" in text and "\nsteps: 8\n" in text
    assert "\npositions: prompt\n" in text and "\ngate: entry\n" in text
    assert "# K: gradient steps per layer per forward call. Range: [1, 1000].\nsteps: 8" in text
    assert not out.exists()                                   # the states file was never read
    assert main(["steer", "eval", "--model", str(tmp_path), "--bank", str(out), "--prompts", "x.jsonl",
                 "--print-config", "--top-k", "2"]) == 0
    text = capsys.readouterr().out
    assert "\ntop_k: 2\n" in text and "epochs" not in text    # eval has no energy training
    assert main(["steer", "train", str(states), "--out", str(out), "--print-config", "--eta", "0"]) == 2
    assert "eta" in capsys.readouterr().err                  # a bad setting is still one line, not a YAML dump

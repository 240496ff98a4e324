"""The config base (mvp_core/config.py): the one YAML loader (aliases and huge files refused), a
new config model written in a few lines gets validation, overrides and docs, and the synthesis
settings keep the puzzle-id key they always had."""
from __future__ import annotations

from typing import Literal

import pytest
from pydantic import Field

from mvp_core.config import MAX_CONFIG_BYTES, DocumentedConfig, load_yaml_mapping, parse_yaml_mapping
from mvp_core.errors import UserError
from mvp_core.train.config import load_config
from mvp_core.puzzle import SYNTH_VERSION, stable_id
from mvp_core.synth.config import SynthConfig


class _Demo(DocumentedConfig):
    steps: int = Field(10, ge=1, le=100, description="Steps.")
    mode: Literal["fast", "slow"] = Field("fast", description="Mode.")
    names: list[str] = Field(default_factory=lambda: ["a"], description="Names.")
    weights: dict[str, float] = Field(default_factory=lambda: {"x": 1.0, "y": 2.0}, description="Weights.")


def test_a_new_model_gets_overrides_errors_and_docs(tmp_path):
    f = tmp_path / "demo.yaml"
    f.write_text("steps: 5\nweights: {y: 3}\n")
    c = _Demo.load(f, ["mode=slow", "names=b,c", "weights.x=0.5"])
    assert (c.steps, c.mode, c.names, c.weights) == (5, "slow", ["b", "c"], {"x": 0.5, "y": 3.0})
    with pytest.raises(UserError, match=r"^unknown config key 'step' \(did you mean 'steps'\?\)$"):
        _Demo.load(None, ["step=3"])
    with pytest.raises(UserError, match=r"^steps must be in \[1, 100\], got 101$"):
        _Demo.load(None, ["steps=101"])
    assert "# Steps. Range: [1, 100].\nsteps: 10\n# Mode. One of: fast, slow.\nmode: fast" in _Demo.documented_yaml()


@pytest.mark.parametrize("text", ["a: &x 1\nb: *x\n", "base: &b {k: 1}\nother: *b\n",
                                  "lol: &a [1, 1]\nlol2: [*a, *a]\n"])
def test_anchors_and_aliases_are_refused(tmp_path, text):
    f = tmp_path / "alias.yaml"
    f.write_text(text)
    with pytest.raises(UserError) as e:
        load_yaml_mapping(f)
    assert "anchors and aliases are not allowed" in str(e.value) and "\n" not in str(e.value)
    with pytest.raises(UserError, match="anchors and aliases"):
        parse_yaml_mapping(text, "the form")


def test_huge_and_unreadable_files_are_refused(tmp_path):
    f = tmp_path / "big.yaml"
    f.write_text("# padding\n" * (MAX_CONFIG_BYTES // 10 + 1) + "max_steps: 3\n")
    with pytest.raises(UserError, match="larger than 64 KiB"):
        load_config(f)
    with pytest.raises(UserError, match="larger than 64 KiB"):
        parse_yaml_mapping("x: 1\n" * (MAX_CONFIG_BYTES // 4), "the form")
    (tmp_path / "bin.yaml").write_bytes(b"\xff\xfe\x00max_steps: 3")
    with pytest.raises(UserError, match=r"bin.yaml:1: not UTF-8 text \(byte 0xff at offset 0\); is this the config file"):
        load_config(tmp_path / "bin.yaml")


def test_run_info_of_a_run_config_is_ignored():
    assert parse_yaml_mapping("run_info: {set: x}\nmax_steps: 2\n") == {"max_steps": 2}


def test_synth_key_is_the_documented_dict():
    """The key is part of every puzzle id: the same field values must keep giving the same key."""
    c = SynthConfig.from_values({"fps": 2.0, "n": 6, "m": 2, "l": 3, "seed": 7})
    expected = stable_id({"fps": 2.0, "n": 6, "m": 2, "l": 3, "kappa": None, "per_video": 3, "seed": 7,
                          "tail": False, "hardness": "hard", "embedder": "pixel", "max_side": 640,
                          "neighbourhood": 0.5, "max_overlap": 0.0, "cross_video": 0,
                          "synth_version": SYNTH_VERSION})
    assert c.key() == expected and SynthConfig().key() != expected


@pytest.mark.parametrize("values,message", [
    ({"m": 7, "n": 8}, "m=7 leaves no context around the gap with N=8"),
    ({"m": 7, "n": 8, "tail": True}, None),
    ({"m": 3, "l": 24}, "l must be >= 1 and m + l <= 26"),
    ({"n": 2}, "n must be >= 3, got 2"),
    ({"fps": 0}, "fps must be > 0, got 0"),
    ({"kappa": 1.5}, "kappa must be in (-1, 1), got 1.5"),
    ({"hardness": "easy"}, "hardness must be one of hard, random, not 'easy'"),
    ({"fps": float("nan")}, "fps must be a finite number"),
    ({"m": 3, "l": 4, "cross_video": 20}, "m + l + cross-video <= 26"),
])
def test_synth_settings_are_checked(values, message):
    if message is None:
        assert SynthConfig.from_values(values).m == values["m"]
        return
    with pytest.raises(UserError) as e:
        SynthConfig.from_values(values)
    assert message in str(e.value) and "\n" not in str(e.value)


def test_synth_cli_reports_a_bad_setting_in_one_line(tmp_path, capsys):
    from app.cli import main
    assert main(["synth", str(tmp_path), "--data", str(tmp_path / "d"), "--m", "9"]) == 2
    assert capsys.readouterr().err.strip() == "error: m=9 leaves no context around the gap with N=8"
    assert main(["synth", str(tmp_path), "--data", str(tmp_path / "d"), "--max-overlap", "1.5"]) == 2
    assert capsys.readouterr().err.strip() == "error: max_overlap must be in [0, 1], got 1.5"
    assert not (tmp_path / "d").exists()                          # refused before anything was written


@pytest.mark.parametrize("flags,message", [
    (["--workers", "0"], "workers must be >= 1, got 0"),
    (["--workers", "5000"], "workers must be in [1, 1024], got 5000"),
    (["--engine", "rey"], "engine must be one of local, ray, not 'rey' (did you mean 'ray'?)"),
    (["--timeout", "0"], "timeout must be > 0, got 0"),
    (["--timeout", "nan"], "timeout must be a finite number, got nan"),
    (["--stall-timeout", "-1"], "stall_timeout must be > 0, got -1"),
])
def test_synth_cli_refuses_a_bad_run_setting_in_one_line(tmp_path, capsys, flags, message):
    from app.cli import main
    assert main(["synth", str(tmp_path), "--data", str(tmp_path / "d"), *flags]) == 2
    assert capsys.readouterr().err.strip() == f"error: {message}"
    assert not (tmp_path / "d").exists()                          # refused before anything was written


def test_synth_print_config_shows_every_setting_with_its_documentation(tmp_path, capsys):
    from app.cli import main
    from mvp_core.synth.config import SynthRunConfig
    assert main(["synth", "--print-config", "--workers", "3", "--engine", "ray", "--timeout", "90",
                 "--data", str(tmp_path / "d")]) == 0
    out = capsys.readouterr().out
    for key in [*SynthConfig.model_fields, *SynthRunConfig.model_fields]:
        assert f"\n{key}: " in out, key
    assert "\nworkers: 3\n" in out and "\nengine: ray\n" in out and "\ntimeout: 90.0\n" in out
    assert "# Worker processes (or Ray tasks in flight) at once. Range: [1, 1024].\nworkers: 3" in out
    assert not (tmp_path / "d").exists()
    assert main(["synth", "--data", str(tmp_path / "d")]) == 2    # without --print-config a folder is needed
    assert "give at least one VIDEO_DIR" in capsys.readouterr().err

"""GRPOConfig: YAML + key=value overrides, validation with one-line errors, documentation."""
from __future__ import annotations

import subprocess

import pytest
from fixtures_grpo import PYTHON, ROOT, mvp_env

from mvp_core.errors import UserError
from mvp_core.train.config import GRPOConfig, documented_yaml, field_docs, load_config
from mvp_core.train.model_setup import lr_factor


def test_defaults_follow_trl():
    c = GRPOConfig()
    assert (c.num_generations, c.beta, c.epsilon, c.loss_type, c.scale_rewards, c.learning_rate) == (
        8, 0.0, 0.2, "dapo", "group", 1e-6)
    assert c.eps_high == 0.2
    assert all(doc for doc in field_docs().values())       # every field documented


def test_yaml_then_overrides(tmp_path):
    f = tmp_path / "c.yaml"
    f.write_text("max_steps: 7\nlearning_rate: 1e-5\nbf16: false\nreward_weights: {format: 0.5}\n")
    c = load_config(f, ["max_steps=9", "loss_type=bnpo", "lora_target_modules=q_proj,v_proj",
                        "reward_weights.exact=0.2", "epsilon_high=0.28"])
    assert c.max_steps == 9 and c.learning_rate == 1e-5 and c.bf16 == "false" and c.loss_type == "bnpo"
    assert c.lora_target_modules == ["q_proj", "v_proj"]
    assert c.reward_weights == {"format": 0.5, "selection": 0.3, "order": 0.3, "exact": 0.2}
    assert c.eps_high == 0.28


@pytest.mark.parametrize("override,message", [
    (["max_step=3"], "unknown config key 'max_step' (did you mean 'max_steps'?)"),
    (["loss_type=ppo"], "loss_type must be one of dapo, grpo, dr_grpo, bnpo, not 'ppo'"),
    (["scale_rewards=std"], "scale_rewards must be one of group, batch, none"),
    (["num_generations=two"], "num_generations must be an integer, got 'two'"),
    (["num_generations=1"], "num_generations must be >= 2"),
    (["per_device_train_batch_size=6"], "must be a multiple of num_generations (8)"),
    (["temperature=0"], "temperature must be >= 0.001"),
    (["top_p=1.5"], "top_p must be in (0, 1]"),
    (["freeze_vision=maybe"], "freeze_vision must be true or false"),
    (["learning_rate=fast"], "learning_rate must be a number"),
    (["reward_weights.speed=1"], "reward_weights has unknown terms: speed"),
    (["max_steps"], "override 'max_steps' is not key=value"),
])
def test_bad_values_are_one_line_errors(override, message):
    with pytest.raises(UserError) as e:
        load_config(None, override)
    assert message in str(e.value) and "\n" not in str(e.value)


def test_bad_files(tmp_path):
    with pytest.raises(UserError, match="does not exist"):
        load_config(tmp_path / "nope.yaml")
    (tmp_path / "list.yaml").write_text("- a\n- b\n")
    with pytest.raises(UserError, match="must hold a mapping"):
        load_config(tmp_path / "list.yaml")
    (tmp_path / "broken.yaml").write_text("a: [1,\n")
    with pytest.raises(UserError, match="not valid YAML"):
        load_config(tmp_path / "broken.yaml")


def test_documented_yaml_round_trips(tmp_path):
    text = documented_yaml(load_config(None, ["max_steps=3"]))
    assert "# G: completions sampled per puzzle" in text
    f = tmp_path / "doc.yaml"
    f.write_text(text)
    assert load_config(f).max_steps == 3


def test_example_configs_load():
    from mvp_core.train.sft_config import load_sft_config
    for f in sorted((ROOT / "configs").glob("*.yaml")):
        (load_sft_config if "sft" in f.stem else load_config)(f)      # SFT configs: mvp sft


def test_lr_schedules():
    c = load_config(None, ["max_steps=10", "warmup_steps=2", "lr_scheduler_type=linear"])
    f = [lr_factor(s, c) for s in range(10)]
    assert f[0] < f[1] < f[2] == 1.0 and f[-1] == pytest.approx(1 / 8) and f == sorted(f[:3]) + f[3:]
    c = load_config(None, ["max_steps=10", "lr_scheduler_type=cosine"])
    assert lr_factor(0, c) == 1.0 and lr_factor(5, c) == pytest.approx(0.5) and lr_factor(10, c) == pytest.approx(0.0)
    assert lr_factor(7, load_config(None, ["lr_scheduler_type=constant"])) == 1.0


def test_cli_print_config_and_error():
    r = subprocess.run([PYTHON, "-m", "app.cli", "train", "configs/tiny.yaml", "max_steps=3", "--print-config"],
                       cwd=ROOT, env=mvp_env(), capture_output=True, text=True, timeout=60)
    assert r.returncode == 0 and "max_steps: 3" in r.stdout and "# Optimizer steps to run." in r.stdout
    r = subprocess.run([PYTHON, "-m", "app.cli", "train", "configs/tiny.yaml", "loss_type=ppo"],
                       cwd=ROOT, env=mvp_env(), capture_output=True, text=True, timeout=60)
    assert r.returncode == 2 and r.stderr.strip() == "error: loss_type must be one of dapo, grpo, dr_grpo, bnpo, not 'ppo'"


@pytest.mark.parametrize("override,message", [
    (["learning_rate=nan"], "learning_rate must be a finite number, got nan"),
    (["beta=.inf"], "beta must be a finite number, got inf"),
    (["max_steps=1e9"], "max_steps must be in [1, 1000000], got 1000000000"),
    (["max_completion_length=100000"], "max_completion_length must be in [1, 32768]"),
    (["num_generations=1000"], "num_generations must be in [2, 256]"),
    (["per_device_train_batch_size=100000"], "per_device_train_batch_size must be in [1, 4096]"),
    (["learning_rate=2"], "learning_rate must be in [0, 1], got 2"),
    (["beta=-0.1"], "beta must be >= 0, got -0.1"),
    (["max_steps=2.5"], "max_steps must be an integer, got 2.5"),
    (["loss_type=dapoo"], "loss_type must be one of dapo, grpo, dr_grpo, bnpo, not 'dapoo' (did you mean 'dapo'?)"),
    (["reward_weights.order=-1"], "reward_weights must each be 0 or in [1e-06, 100]"),
    (["lora_target_modules=5"], "lora_target_modules must be a list, got 5"),
])
def test_ranges_and_finite_numbers(override, message):
    with pytest.raises(UserError) as e:
        load_config(None, override)
    assert message in str(e.value) and "\n" not in str(e.value)


def test_assignment_is_validated_too():
    c = GRPOConfig()
    c.puzzles = "x.jsonl"
    with pytest.raises(UserError, match="must be a multiple of num_generations"):
        c.per_device_train_batch_size = 3


def test_every_key_is_documented_with_its_range():
    text = documented_yaml()
    for name, field in GRPOConfig.model_fields.items():
        assert f"\n{name}: " in "\n" + text, name
        assert field.description and f"# {field.description}" in text
    assert "# Optimizer steps to run. Range: [1, 1000000]." in text
    assert "One of: dapo, grpo, dr_grpo, bnpo." in text

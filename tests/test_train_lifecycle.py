"""One run lifecycle for both trainers (mvp_core/train/lifecycle.py): `mvp sft` and
`mvp train` start, resume, write the run directory, status, checkpoints and metrics through the same
code, each trainer holding only its own step; one end-of-sequence rule for the SFT target and the
GRPO sampler's stop (model_setup.end_ids).

Each test failed before the lifecycle: GRPO's config.yaml, status.json and checkpoints did not say
which trainer wrote them (SFT edited `kind: sft` into its YAML as text); sft.py kept its own copy of
start/resume/status/checkpoint code; and the SFT target ended with <|im_end|> while GRPO stopped on the
tokenizer's and generation config's eos only, so a base model whose eos is <|endoftext|> was taught by
SFT to stop on a token GRPO's sampler ran through."""
from __future__ import annotations

import ast
import copy
import json
from pathlib import Path
from types import SimpleNamespace

import pytest
import yaml
from fixtures_grpo import tiny_overrides

from mvp_core.errors import UserError
from mvp_core.train import batching
from mvp_core.train.config import load_config
from mvp_core.train.loop import train
from mvp_core.train.model_setup import end_ids
from mvp_core.train.rundir import read_status
from mvp_core.train.sft import targets, train_sft
from mvp_core.train.sft_config import load_sft_config

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(autouse=True)
def _threads(torch_one_thread):
    yield


def _grpo(model_dir, data, out, **extra):
    base = dict(max_steps=2, save_steps=1, max_completion_length=4, num_generations=2,
                per_device_train_batch_size=2, gradient_accumulation_steps=1)
    return load_config(None, tiny_overrides(model_dir, data, out, **{**base, **extra}))


def _sft(model_dir, data, out, **extra):
    base = {"model": str(model_dir), "puzzles": str(data / "puzzles.jsonl"), "output_dir": str(out),
            "per_device_train_batch_size": 2, "max_completion_length": 4, "max_pixels": 3136,
            "max_steps": 2, "save_steps": 1, "seed": 0, **extra}
    return load_sft_config(None, [f"{k}={v}" for k, v in base.items()])


@pytest.fixture(scope="module")
def both_runs(tiny_model_dir, model_data, tmp_path_factory):
    import torch
    torch.set_num_threads(1)
    root = tmp_path_factory.mktemp("lifecycle")
    data = model_data[0]
    train(_grpo(tiny_model_dir, data, root / "grpo"))
    train_sft(_sft(tiny_model_dir, data, root / "sft"))
    return {"grpo": root / "grpo", "sft": root / "sft"}


def _files(run: Path) -> set[str]:
    return {str(p.relative_to(run)) for p in run.rglob("*") if p.is_file() and "completions" not in p.parts
            and p.parent.name != "tensorboard"}


def test_both_trainers_write_the_same_run_directory(both_runs):
    grpo, sft = both_runs["grpo"], both_runs["sft"]
    assert _files(grpo) == _files(sft)                      # same files, same checkpoint layout
    for kind, run in both_runs.items():
        conf = yaml.safe_load((run / "config.yaml").read_text())
        assert conf["run_info"]["kind"] == kind               # written through the config model, not as text
        status = read_status(run)
        assert status["kind"] == kind and status["state"] == "finished" and status["step"] == 2
        for step in (1, 2):
            state = json.loads((run / "checkpoints" / f"step_{step:06d}" / "trainer_state.json").read_text())
            assert state["kind"] == kind and state["step"] == step
    assert set(read_status(grpo)) == set(read_status(sft))


def test_both_trainers_resume_and_refuse_the_same_way(both_runs, tiny_model_dir, model_data, tmp_path):
    data = model_data[0]
    # resuming a finished run at its last checkpoint: nothing left to do, both say so the same way
    assert train(_grpo(tiny_model_dir, data, both_runs["grpo"]), resume=True)["step"] == 2
    assert train_sft(_sft(tiny_model_dir, data, both_runs["sft"]), resume=True)["step"] == 2
    # a fresh run into a directory that holds one, and --resume of nothing: one line each, both trainers
    for start, cfg in ((train, _grpo(tiny_model_dir, data, both_runs["grpo"])),
                       (train_sft, _sft(tiny_model_dir, data, both_runs["sft"]))):
        with pytest.raises(UserError, match="already holds a run"):
            start(cfg)
    for start, cfg in ((train, _grpo(tiny_model_dir, data, tmp_path / "g")),
                       (train_sft, _sft(tiny_model_dir, data, tmp_path / "s"))):
        with pytest.raises(UserError, match="holds no run to resume"):
            start(cfg, resume=True)


def test_each_trainer_holds_only_its_step():
    """The lifecycle's moves (run directory, status, checkpoints, signals, resume) live in lifecycle.py
    alone; sft.py and loop.py call none of them."""
    lifecycle_only = {"StopFlag", "save_checkpoint", "write_status", "create", "latest_checkpoint",
                      "load_optimizer_state", "load_rng", "resume_schedule", "signal", "write_config"}
    for name in ("sft.py", "loop.py"):
        tree = ast.parse((ROOT / "mvp_core" / "train" / name).read_text())
        used = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)} | \
               {n.attr for n in ast.walk(tree) if isinstance(n, ast.Attribute)}
        assert not used & lifecycle_only, (name, used & lifecycle_only)
    assert not (ROOT / "mvp_core" / "train" / "start.py").exists()


def test_one_end_of_sequence_rule(tiny_policy, tiny_model_dir, model_data):
    """A base-model setup (eos <|endoftext|> in the tokenizer and generation config): the SFT target
    ends with the chat turn's end, and GRPO's sampler stops (and trims) on that same token."""
    model, processor = tiny_policy
    proc = copy.deepcopy(processor)
    tok = proc.tokenizer
    tok.eos_token = "<|endoftext|>"
    endoftext, im_end = tok.convert_tokens_to_ids("<|endoftext|>"), tok.convert_tokens_to_ids("<|im_end|>")
    gen = copy.deepcopy(model.generation_config)
    gen.eos_token_id = endoftext
    base_model = SimpleNamespace(generation_config=gen)
    end = end_ids(base_model, proc)
    assert end.target == im_end and end.stop == {im_end, endoftext}
    cfg = _sft(tiny_model_dir, model_data[0], "unused")
    comps = targets(cfg, proc, model_data[1][:2], end)
    assert all(int(c[-1]) == end.target for c in comps)                 # what SFT teaches to emit last
    import torch
    sampled = torch.tensor([5, 6, im_end, 7, 8])
    assert batching.trim_completion(sampled, end.stop).tolist() == [5, 6, im_end]   # where GRPO stops
    # the sampler is handed the same stop set (mvp_core/model/sampler.py generation_config)
    from mvp_core.model.sampler import SamplerSettings, generation_config
    gc = generation_config(SamplerSettings(), base_model, eos_token_id=sorted(end.stop))
    assert set(gc.eos_token_id) == end.stop

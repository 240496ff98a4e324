"""Loading VideoLLMs from a local path; the full 3B shape on the meta device (nothing allocated)."""
from __future__ import annotations

import json

import pytest
import torch

from mvp_core.errors import UserError
from mvp_core.model.policy import load_policy, memory_estimate, model_class, model_type, param_bytes
from mvp_core.model.prompt import PromptConfig, build_inputs, estimate_prompt_tokens, visual_tokens

pytestmark = pytest.mark.usefixtures("torch_one_thread")

# The public Qwen/Qwen2.5-VL-3B-Instruct config.json (values copied; weights never needed).
QWEN25_VL_3B = dict(
    text_config=dict(vocab_size=151936, hidden_size=2048, intermediate_size=11008, num_hidden_layers=36,
                     num_attention_heads=16, num_key_value_heads=2, max_position_embeddings=128000,
                     rms_norm_eps=1e-6, tie_word_embeddings=True, bos_token_id=151643, eos_token_id=151645,
                     rope_parameters={"rope_type": "default", "rope_theta": 1e6, "mrope_section": [16, 24, 24]}),
    vision_config=dict(depth=32, hidden_size=1280, intermediate_size=3420, num_heads=16, out_hidden_size=2048,
                       patch_size=14, spatial_merge_size=2, temporal_patch_size=2, window_size=112,
                       fullatt_block_indexes=[7, 15, 23, 31], tokens_per_second=2),
    image_token_id=151655, video_token_id=151656, vision_start_token_id=151652, vision_end_token_id=151653,
    tie_word_embeddings=True,
)
# Qwen2.5-VL's preprocessor_config.json bounds.
MIN_PIXELS, MAX_PIXELS = 3136, 12845056


def test_tiny_model_loads_with_options(tiny_model_dir):
    model, proc = load_policy(tiny_model_dir, dtype="bfloat16", device="cpu", attn_implementation="eager")
    assert type(model).__name__ == "Qwen2_5_VLForConditionalGeneration"
    assert next(model.parameters()).dtype == torch.bfloat16 and not model.training
    assert model.config._attn_implementation == "eager"
    assert proc.tokenizer.padding_side == "left"
    model, _ = load_policy(tiny_model_dir)                      # auto on the CPU -> float32
    assert next(model.parameters()).dtype == torch.float32
    # the tokenizer round-trips the MVP prompt's vocabulary
    tok = proc.tokenizer
    for s in ["<think>x</think><answer>C, A, F</answer>", "[MASKED]", "Option Z:", "ABCDEFGHIJKLMNOPQRSTUVWXYZ"]:
        assert tok.decode(tok(s)["input_ids"]) == s


def test_tiny_model_is_deterministic(tmp_path):
    from mvp_core.model.tiny import build_tiny_model
    a, b = build_tiny_model(tmp_path / "a", seed=3), build_tiny_model(tmp_path / "b", seed=3)
    assert (a / "model.safetensors").read_bytes() == (b / "model.safetensors").read_bytes()
    assert (a / "tokenizer.json").read_text() == (b / "tokenizer.json").read_text()


def test_not_a_model_is_a_user_error(tmp_path, tiny_model_dir):
    with pytest.raises(UserError, match="not a directory"):
        load_policy(tmp_path / "missing")
    with pytest.raises(UserError, match="no config.json"):
        load_policy(tmp_path)
    (tmp_path / "config.json").write_text("{not json")
    with pytest.raises(UserError, match="not valid JSON"):
        load_policy(tmp_path)
    (tmp_path / "config.json").write_text(json.dumps({"model_type": "bert"}))
    with pytest.raises(UserError, match="'bert' is not supported"):
        load_policy(tmp_path)
    (tmp_path / "config.json").write_text((tiny_model_dir / "config.json").read_text())
    with pytest.raises(UserError, match="cannot load the processor"):
        load_policy(tmp_path)                                    # a config but no processor files
    with pytest.raises(UserError, match="dtype must be one of"):
        load_policy(tiny_model_dir, dtype="int3")


@pytest.mark.parametrize("family,cls", [("qwen2_vl", "Qwen2VLForConditionalGeneration"),
                                        ("qwen3_vl", "Qwen3VLForConditionalGeneration")])
def test_other_families_load_and_answer(tmp_path, model_data, family, cls):
    """Qwen2-VL and Qwen3-VL checkpoints load with their own classes and answer puzzles (images and
    video mode) through the same prompt and rollout code."""
    from fixtures_model import dir_loader

    from mvp_core.model.rollout import GenConfig, run_rollouts
    from mvp_core.model.tiny import build_tiny_model
    d = build_tiny_model(tmp_path / family, family=family)
    assert model_type(d) == family
    model, proc = load_policy(d)
    assert type(model).__name__ == cls
    data, recs = model_data
    for video_mode in (False, True):
        rows = run_rollouts(model, proc, recs[:1], dir_loader(data), PromptConfig(video_mode=video_mode),
                            GenConfig(num_generations=2, max_new_tokens=4))
        assert len(rows) == 2 and all(0 <= r["total"] <= 1 for r in rows)
    assert model_class("qwen3_vl_moe").__name__ == "Qwen3VLMoeForConditionalGeneration"


def test_full_3b_shape_on_meta_device(tiny_policy, model_data):
    """The real 3B shape: parameter count, bytes and KV cache from the config, and prompt lengths for
    720p frames at a configured max_pixels, all without allocating a weight."""
    from transformers import Qwen2_5_VLConfig, Qwen2_5_VLForConditionalGeneration
    cfg = Qwen2_5_VLConfig(**QWEN25_VL_3B)
    with torch.device("meta"):
        model = Qwen2_5_VLForConditionalGeneration(cfg).to(torch.bfloat16)
    assert next(model.parameters()).device.type == "meta"
    n = sum(p.numel() for p in model.parameters())
    assert 3.70e9 < n < 3.80e9                               # published: 3.75B
    assert param_bytes(model) == 2 * n

    _, proc = tiny_policy
    data, recs = model_data
    pcfg = PromptConfig(max_pixels=448 * 448)
    est = estimate_prompt_tokens(proc, recs[0], pcfg, frame_hw=(720, 1280))
    # N - m context frames + m + l options = 12 images for N=8, m=3, l=4
    assert est["images"] == 12 and est["videos"] == 0
    # 1280x720 scaled into 448^2 px and rounded to 28-px cells: 588x336 -> 21 x 12 merged tokens
    assert est["per_image"] == visual_tokens(720, 1280, MIN_PIXELS, 448 * 448) == 21 * 12
    assert est["image"] == 12 * est["per_image"]
    # under Qwen's default bound a 720p frame is only rounded (1288x728 px): 46 x 26 = 1196 tokens
    assert visual_tokens(720, 1280, MIN_PIXELS, MAX_PIXELS) == 46 * 26
    mem = memory_estimate(model, seq_len=est["total"], batch=8)
    head_dim = 2048 // 16
    assert mem["kv_cache_bytes"] == 2 * 36 * 2 * head_dim * est["total"] * 8 * 2
    assert 7.4e9 < mem["weights_bytes"] < 7.6e9
    train = memory_estimate(model, seq_len=est["total"], batch=8, train=True)
    assert train["optimizer_bytes"] == 12 * n                 # fp32 grads + two Adam moments
    assert 52e9 < train["total_bytes"] < 54e9                 # ~14 bytes per parameter in bf16
    assert est["total"] < cfg.text_config.max_position_embeddings


def test_estimate_matches_processor_on_real_frames(tiny_policy, model_data):
    from fixtures_model import dir_loader
    _, proc = tiny_policy
    data, recs = model_data
    for pcfg in (PromptConfig(), PromptConfig(max_pixels=56 * 56), PromptConfig(video_mode=True)):
        inp = build_inputs(proc, recs[0], dir_loader(data), pcfg)
        est = estimate_prompt_tokens(proc, recs[0], pcfg, frame_hw=(180, 320))
        assert inp["input_ids"].shape[1] == est["total"], pcfg


def test_tiny_presets(tmp_path):
    """`mvp tiny-model --preset learn` builds the documented shape; an unknown preset is refused."""
    from mvp_core.model.tiny import PRESETS, build_tiny_model
    d = build_tiny_model(tmp_path / "learn", preset="learn")
    cfg = json.loads((d / "config.json").read_text())
    text, vision = cfg["text_config"], cfg["vision_config"]
    assert (text["hidden_size"], text["num_hidden_layers"], vision["depth"]) == (192, 4, 2)
    assert json.loads((d / "processor_config.json").read_text())["image_processor"]["size"]["longest_edge"] == 56 * 56
    assert PRESETS["test"].hidden == 128 and "preset learn" in (d / "TINY_MODEL.txt").read_text()
    ci = json.loads((build_tiny_model(tmp_path / "ci", preset="ci") / "config.json").read_text())
    assert (ci["text_config"]["hidden_size"], ci["text_config"]["num_hidden_layers"], ci["vision_config"]["depth"]) \
        == (128, 2, 2)
    with pytest.raises(ValueError, match="preset must be one of"):
        build_tiny_model(tmp_path / "x", preset="huge")

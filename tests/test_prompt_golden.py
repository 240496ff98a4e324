"""Golden prompts: the rendered text and the number of visual tokens are pinned for the tiny
processor on real frames (320x180 JPEGs from bikes.mp4 and the trailer)."""
from __future__ import annotations

import copy

import pytest
import torch
from fixtures_model import dir_loader

from mvp_core.errors import UserError
from mvp_core.model.prompt import (
    MASK_SLOT,
    PromptConfig,
    build_inputs,
    count_visual_tokens,
    render_messages,
    render_text,
)

pytestmark = pytest.mark.usefixtures("torch_one_thread")

IMG = "<|vision_start|><|image_pad|><|vision_end|>"
GOLDEN_DEFAULT = (
    "<|im_start|>system\nYou are a helpful assistant.<|im_end|>\n"
    "<|im_start|>user\n"
    "These are 8 frames of a video in temporal order. 3 consecutive frames are masked and marked [MASKED].\n"
    f"Frame 1: {IMG}\nFrame 2: {IMG}\nFrame 3: [MASKED]\nFrame 4: [MASKED]\nFrame 5: [MASKED]\n"
    f"Frame 6: {IMG}\nFrame 7: {IMG}\nFrame 8: {IMG}\n"
    "Candidate frames:\n"
    f"Option A: {IMG}\nOption B: {IMG}\nOption C: {IMG}\nOption D: {IMG}\nOption E: {IMG}\n"
    f"Option F: {IMG}\nOption G: {IMG}\n"
    "Choose the 3 options that fill the masked frames, in temporal order. Think step by step, then give "
    "the labels of the chosen options in order. Answer in the format <think>...</think><answer>C, A, F</answer>"
    "<|im_end|>\n<|im_start|>assistant\n")
GOLDEN_VIDEO_HEAD = (
    "<|im_start|>user\n"
    "This video shows 5 frames of a clip in temporal order. 3 consecutive frames are missing ([MASKED]) "
    "between frame 2 and frame 3 of the video (between {left:.1f} s and {right:.1f} s).\n"
    "<|vision_start|><|video_pad|><|vision_end|>\nCandidate frames:\n")
# 320x180 frames under the tiny processor's 112x112-pixel bound become 140x84 px: 10 x 6 patches of
# 14 px, merged 2x2 -> 15 tokens per image.
PER_IMAGE = 15


@pytest.fixture(scope="module")
def puzzle(model_data):
    data, recs = model_data
    rec = copy.deepcopy(recs[0])
    rec["mask"] = {"start": 2, "length": 3}
    return data, rec


def test_default_prompt_text_is_pinned(tiny_policy, puzzle):
    _, proc = tiny_policy
    _, rec = puzzle
    assert render_text(proc, rec) == GOLDEN_DEFAULT


def test_default_prompt_visual_tokens_are_pinned(tiny_policy, puzzle):
    _, proc = tiny_policy
    data, rec = puzzle
    inp = build_inputs(proc, rec, dir_loader(data))
    assert count_visual_tokens(inp, proc) == {"image": 12 * PER_IMAGE, "video": 0}
    assert inp["image_grid_thw"].tolist() == [[1, 6, 10]] * 12
    # mm_token_type_ids marks image tokens (1): without it the 3-D rotary positions are skipped
    assert int((inp["mm_token_type_ids"] == 1).sum()) == 12 * PER_IMAGE
    text_ids = proc.tokenizer(GOLDEN_DEFAULT, add_special_tokens=False)["input_ids"]
    assert inp["input_ids"].shape == (1, len(text_ids) - 12 + 12 * PER_IMAGE)


def test_max_pixels_changes_visual_tokens(tiny_policy, puzzle):
    _, proc = tiny_policy
    data, rec = puzzle
    small = build_inputs(proc, rec, dir_loader(data), PromptConfig(max_pixels=56 * 56))
    big = build_inputs(proc, rec, dir_loader(data), PromptConfig(min_pixels=196 * 196, max_pixels=224 * 224))
    assert count_visual_tokens(small, proc)["image"] == 12 * 2       # 56x28 px -> 1 x 2 merged tokens
    assert big["image_grid_thw"].tolist() == [[1, 12, 20]] * 12       # 168x280 px
    assert count_visual_tokens(big, proc)["image"] == 12 * 60


def test_video_mode(tiny_policy, puzzle):
    _, proc = tiny_policy
    data, rec = puzzle
    text = render_text(proc, rec, PromptConfig(video_mode=True))
    t0 = rec["frames"][0]["t"]
    head = GOLDEN_VIDEO_HEAD.format(left=rec["frames"][1]["t"] - t0, right=rec["frames"][5]["t"] - t0)
    assert head in text and text.count(IMG) == 7 and MASK_SLOT in text
    inp = build_inputs(proc, rec, dir_loader(data), PromptConfig(video_mode=True))
    # 2 frames before the gap + 3 after (padded to 4) -> 3 temporal patches of 15 tokens each
    assert count_visual_tokens(inp, proc) == {"image": 7 * PER_IMAGE, "video": 3 * PER_IMAGE}
    assert inp["video_grid_thw"].tolist() == [[3, 6, 10]]
    # time per temporal patch from the real times: 6 video frames over the span they cover
    ctx = rec["frames"][:2] + rec["frames"][5:]
    native = rec["video"]["fps"]
    total = round((ctx[-1]["t"] - ctx[0]["t"]) * native) + 1
    assert inp["second_per_grid_ts"].tolist() == [pytest.approx(2 / (6 / total * native), rel=1e-5)]


@pytest.mark.parametrize("start", [1, 2, 3, 4])
def test_video_mode_gap_starts_on_a_temporal_patch(tiny_policy, puzzle, start):
    """Each frame is shown as a flat grey of its own level; reading the levels back out of the
    processor's temporal patches proves that no patch holds frames from both sides of the gap."""
    import numpy as np
    _, proc = tiny_policy
    _, rec = copy.deepcopy(puzzle)
    rec["mask"] = {"start": start, "length": 3}
    level = {f["uri"]: 20 + 25 * i for i, f in enumerate(rec["frames"])}
    side = {f["uri"]: ("before" if i < start else "after") for i, f in enumerate(rec["frames"])}
    loader = lambda uri: np.full((84, 140, 3), level.get(uri, 250), np.uint8)  # noqa: E731
    inp = build_inputs(proc, rec, loader, PromptConfig(video_mode=True))
    t, gh, gw = inp["video_grid_thw"][0].tolist()
    tp = proc.video_processor.temporal_patch_size
    pv = inp["pixel_values_videos"].reshape(t, gh * gw, 3, tp, -1).mean(dim=(1, 2, 4))   # (t, tp)
    ip = proc.video_processor
    grey = (pv * float(np.mean(ip.image_std)) + float(np.mean(ip.image_mean))) * 255.0
    by_level = {v: side[u] for u, v in level.items()}
    shown = [lv for u, lv in level.items() if side[u] == "before" or
             rec["frames"].index(next(f for f in rec["frames"] if f["uri"] == u)) >= start + 3]
    for patch in grey.tolist():
        levels = [min(shown, key=lambda lv: abs(lv - g)) for g in patch]
        assert len({by_level[lv] for lv in levels}) == 1, (start, patch)
    assert t == -(-len(rec["frames"][:start]) // tp) + -(-len(rec["frames"][start + 3:]) // tp)


def test_example_answer_uses_labels_of_the_pool(puzzle):
    _, rec = puzzle
    small = copy.deepcopy(rec)
    small["mask"] = {"start": 2, "length": 2}
    keep = [o for o in small["options"] if o["kind"] == "target"][:2] + \
        [o for o in small["options"] if o["kind"] != "target"][:1]
    small["options"] = [{**o, "label": "ABC"[i]} for i, o in enumerate(keep)]
    small["answer"] = ["A", "B"]
    text = render_messages(small)[0]["content"][-1]["text"]
    example = text.rsplit("<answer>", 1)[1].split("</answer>")[0].split(", ")
    assert len(example) == 2 and set(example) <= {"A", "B", "C"}


def test_tail_mask_and_messages(puzzle):
    _, rec = puzzle
    tail = copy.deepcopy(rec)
    tail["mask"] = {"start": 5, "length": 3}
    msgs = render_messages(tail)
    parts = msgs[-1]["content"]
    assert [p["image"] for p in parts if p["type"] == "image"][:5] == [f["uri"] for f in rec["frames"][:5]]
    assert "Frame 8: [MASKED]" in "".join(p.get("text", "") for p in parts)
    assert "after the last frame" in render_messages(tail, PromptConfig(video_mode=True))[-1]["content"][0]["text"]
    sys_msgs = render_messages(rec, PromptConfig(system="Be brief.", number_frames=False))
    assert sys_msgs[0] == {"role": "system", "content": [{"type": "text", "text": "Be brief."}]}
    assert "Frame 1:" not in sys_msgs[1]["content"][0]["text"]
    bad = copy.deepcopy(rec)
    bad["mask"] = {"start": 7, "length": 3}
    with pytest.raises(UserError, match="does not fit"):
        render_messages(bad)


def test_batched_inputs_generate(tiny_policy, model_data):
    model, proc = tiny_policy
    data, recs = model_data
    inp = build_inputs(proc, recs[:3], dir_loader(data))
    assert inp["input_ids"].shape[0] == 3
    assert (inp["attention_mask"][:, -1] == 1).all()                 # left padding
    torch.manual_seed(0)
    out = model.generate(**inp, do_sample=True, num_return_sequences=2, max_new_tokens=6)
    assert out.shape[0] == 6 and out.shape[1] <= inp["input_ids"].shape[1] + 6

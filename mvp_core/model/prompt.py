"""A puzzle as chat messages for a Qwen-VL model, and the processor inputs ready for `generate`.

Default layout (one user message): the N frames in temporal order as images, each masked one
replaced by a `[MASKED]` text slot, then the options as labelled images ("Option A:" image ...),
then the instruction with the required answer format `<think>...</think><answer>C, A, F</answer>`.
Video mode shows the context frames as one video (frames we decoded, plus `video_metadata`) and
states in text where the gap is. Images are numpy arrays from `load_frame(uri)`; nothing here
decodes video."""
from __future__ import annotations

from dataclasses import dataclass, field

from mvp_core.errors import UserError
from mvp_core.puzzle import Puzzle

MASK_SLOT = "[MASKED]"
# A fixed example for the answer format. Fixed (not derived from the puzzle) so it never leaks the
# answer; cut to m labels so the example has the right length.
_EXAMPLE = ["C", "A", "F", "B", "E", "D", "H", "G"]


@dataclass
class PromptConfig:
    """How a puzzle is shown to the model.

    min_pixels / max_pixels: resize bounds per image (and per video frame), in pixels; None keeps the
      processor's own defaults. Visual tokens per image ~= pixels / (28*28).
    video_mode: show the context frames as one video instead of separate images.
    number_frames: prefix each context frame with "Frame k:" (helps the model refer to positions).
    instruction: the task text; `{m}` is replaced by the number of masked frames and `{example}` by a
      well-formed example answer.
    system: an optional system message (None: the chat template's default).
    """
    min_pixels: int | None = None
    max_pixels: int | None = None
    video_mode: bool = False
    number_frames: bool = True
    instruction: str = (
        "Choose the {m} options that fill the masked frames, in temporal order. "
        "Think step by step, then give the labels of the chosen options in order. "
        "Answer in the format <think>...</think><answer>{example}</answer>")
    system: str | None = None
    extra: dict = field(default_factory=dict)   # passed through to the processor call


def _as_puzzle(p) -> Puzzle:
    return p if isinstance(p, Puzzle) else Puzzle.from_dict(p)


def example_answer(m: int) -> str:
    return ", ".join(_EXAMPLE[: max(1, min(m, len(_EXAMPLE)))])


def render_messages(puzzle, cfg: PromptConfig | None = None) -> list[dict]:
    """Chat messages for one puzzle. Image parts are {"type": "image", "image": uri} with the uri
    relative to the data directory; a video part is {"type": "video", "video": [uri, ...]}."""
    cfg = cfg or PromptConfig()
    pz = _as_puzzle(puzzle)
    n, m, start = len(pz.frames), pz.mask.length, pz.mask.start
    if m < 1 or start < 0 or start + m > n:
        raise UserError(f"puzzle {pz.id}: mask {start}+{m} does not fit {n} frames")
    parts: list[dict] = []

    def text(s: str):
        # Merge consecutive text parts: fewer template pieces, identical rendered text.
        if parts and parts[-1]["type"] == "text":
            parts[-1]["text"] += s
        else:
            parts.append({"type": "text", "text": s})

    if cfg.video_mode:
        context = pz.context_before + pz.context_after
        text(f"This video shows {len(context)} frames of a clip in temporal order. "
             f"{m} consecutive frames are missing ({MASK_SLOT}) ")
        if start == 0:
            text("before the first frame of the video.\n")
        elif start + m == n:
            text("after the last frame of the video.\n")
        else:
            text(f"between frame {start} and frame {start + 1} of the video.\n")
        parts.append({"type": "video", "video": [f.uri for f in context]})
        text("\n")
    else:
        text(f"These are {n} frames of a video in temporal order. "
             f"{m} consecutive frames are masked and marked {MASK_SLOT}.\n")
        for i, f in enumerate(pz.frames):
            if cfg.number_frames:
                text(f"Frame {i + 1}: ")
            if start <= i < start + m:
                text(f"{MASK_SLOT}\n")
            else:
                parts.append({"type": "image", "image": f.uri})
                text("\n")
    text("Candidate frames:\n")
    for o in pz.options:
        text(f"Option {o.label}: ")
        parts.append({"type": "image", "image": o.uri})
        text("\n")
    text(cfg.instruction.format(m=m, example=example_answer(m)))
    messages = []
    if cfg.system:
        messages.append({"role": "system", "content": [{"type": "text", "text": cfg.system}]})
    messages.append({"role": "user", "content": parts})
    return messages


def render_text(processor, puzzle, cfg: PromptConfig | None = None) -> str:
    """The prompt string (chat template applied, one placeholder token per image/video)."""
    msgs = render_messages(puzzle, cfg)
    return processor.apply_chat_template(msgs, add_generation_prompt=True, tokenize=False)


def _vision_inputs(puzzle, cfg: PromptConfig, load_frame):
    """(images, videos, video_metadata) in the order the placeholders appear."""
    pz = _as_puzzle(puzzle)
    images, videos, metas = [], [], []
    for msg in render_messages(pz, cfg):
        for part in msg["content"]:
            if part["type"] == "image":
                images.append(_writable(load_frame(part["image"])))
            elif part["type"] == "video":
                frames = [_writable(load_frame(u)) for u in part["video"]]
                videos.append(frames)
                metas.append(_video_metadata(pz, frames))
    return images, videos, metas


def _writable(img):
    # torch.from_numpy warns on read-only arrays (np.asarray of a PIL image is one); copying a
    # small frame is cheaper than the warning noise in every rollout log.
    flags = getattr(img, "flags", None)
    return img.copy() if flags is not None and not flags.writeable else img


def video_rate(pz: Puzzle) -> float:
    """Frames per second of the context video: its frames over the time they span (the gap
    included), so the video's temporal positions cover the real duration."""
    ctx = pz.context_before + pz.context_after
    span = ctx[-1].t - ctx[0].t if len(ctx) > 1 else 0.0
    if span > 0:
        return (len(ctx) - 1) / span
    return pz.sample_fps or float(pz.params.get("fps", 1.0)) or 1.0


def _video_metadata(pz: Puzzle, frames) -> dict:
    # Without metadata the processor assumes 24 fps. It derives the time per temporal patch
    # (second_per_grid_ts) from len(frames_indices) / total_num_frames * fps, so describing the
    # frames as a complete video at `video_rate` gives exactly that rate.
    h, w = frames[0].shape[:2]
    n = len(frames)
    return {"total_num_frames": n, "fps": video_rate(pz), "frames_indices": list(range(n)),
            "width": w, "height": h}


def _size_kwargs(cfg: PromptConfig, processor) -> dict:
    if cfg.min_pixels is None and cfg.max_pixels is None:
        return {}
    base = processor.image_processor.size
    size = {"shortest_edge": cfg.min_pixels or base["shortest_edge"],
            "longest_edge": cfg.max_pixels or base["longest_edge"]}
    if size["shortest_edge"] > size["longest_edge"]:
        size["shortest_edge"] = size["longest_edge"]
    return {"images_kwargs": {"size": size}, "videos_kwargs": {"size": size}}


def build_inputs(processor, puzzles, load_frame, cfg: PromptConfig | None = None, return_tensors="pt"):
    """Processor outputs (input_ids, attention_mask, mm_token_type_ids, pixel_values, image_grid_thw,
    ...) for one puzzle or a list of puzzles (left-padded batch), ready for `model.generate(**out)`."""
    cfg = cfg or PromptConfig()
    batch = puzzles if isinstance(puzzles, list) else [puzzles]
    texts, images, videos, metas = [], [], [], []
    for pz in batch:
        texts.append(render_text(processor, pz, cfg))
        im, vi, me = _vision_inputs(pz, cfg, load_frame)
        images += im
        videos += vi
        metas += me
    kw = dict(_size_kwargs(cfg, processor), **cfg.extra)
    if images:
        kw["images"] = images
    if videos:
        kw["videos"] = videos
        kw["video_metadata"] = metas
    return processor(text=texts, padding=True, return_tensors=return_tensors, **kw)


def count_visual_tokens(inputs, processor) -> dict:
    """Visual placeholder tokens per kind in a processor output (all rows together)."""
    ids = inputs["input_ids"]
    return {"image": int((ids == processor.image_token_id).sum()),
            "video": int((ids == processor.video_token_id).sum())}


def visual_tokens(height: int, width: int, min_pixels: int, max_pixels: int, patch: int = 14,
                  merge: int = 2, frames: int = 1, temporal_patch: int = 2) -> int:
    """LLM tokens one image (frames=1) or one video of `frames` frames costs after Qwen-VL's resize
    (sides rounded to patch*merge, area kept within [min_pixels, max_pixels]) and 2x2 merging."""
    from transformers.models.qwen2_vl.image_processing_qwen2_vl import smart_resize
    h, w = smart_resize(height, width, factor=patch * merge, min_pixels=min_pixels, max_pixels=max_pixels)
    t = 1 if frames == 1 else -(-frames // temporal_patch)
    return t * (h // patch) * (w // patch) // (merge * merge)


def estimate_prompt_tokens(processor, puzzle, cfg: PromptConfig | None = None,
                           frame_hw: tuple[int, int] = (720, 1280)) -> dict:
    """Prompt length without loading a pixel: text tokens from the tokenizer, visual tokens from
    the resize rule, for frames of `frame_hw` (height, width). Used to size a full model's context
    and KV cache before allocating it."""
    cfg = cfg or PromptConfig()
    ip = processor.image_processor
    size = _size_kwargs(cfg, processor).get("images_kwargs", {}).get("size", ip.size)
    lo, hi = size["shortest_edge"], size["longest_edge"]
    text = render_text(processor, puzzle, cfg)
    # Each placeholder is one token in the rendered text and is expanded by the processor.
    ids = processor.tokenizer(text, add_special_tokens=False)["input_ids"]
    n_img = ids.count(processor.image_token_id)
    n_vid = ids.count(processor.video_token_id)
    per_image = visual_tokens(*frame_hw, lo, hi, ip.patch_size, ip.merge_size)
    image = n_img * per_image
    video = 0
    for msg in render_messages(puzzle, cfg):
        for part in msg["content"]:
            if part["type"] == "video":
                video += visual_tokens(*frame_hw, lo, hi, ip.patch_size, ip.merge_size,
                                       frames=len(part["video"]), temporal_patch=ip.temporal_patch_size)
    text_tokens = len(ids) - n_img - n_vid
    return {"text": text_tokens, "image": image, "video": video, "images": n_img, "videos": n_vid,
            "per_image": per_image, "total": text_tokens + image + video}

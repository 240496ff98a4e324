"""A puzzle as chat messages for a Qwen-VL model, and the processor inputs ready for `generate`.

Default layout (one user message): the N frames in temporal order as images, each masked one
replaced by a `[MASKED]` text slot, then the options as labelled images ("Option A:" image ...),
then the instruction with the required answer format `<think>...</think><answer>C, A, F</answer>`.
Video mode shows the context frames as one video (frames we decoded, plus `video_metadata`) and
states in text where the gap is. Qwen-VL fuses every `temporal_patch` (2) consecutive video frames
into one temporal patch, so the frames before the gap are padded (the last one repeated) to a
multiple of it: the gap always starts on a patch boundary and no patch mixes frames from both sides.
The metadata carries the frames' real times (relative to the first shown frame): Qwen3-VL turns them
into per-patch timestamps, Qwen2/2.5-VL into the time per patch. Images are numpy arrays from
`load_frame(uri)`; nothing here decodes video."""
from __future__ import annotations

import re
from dataclasses import dataclass, field

from mvp_core.errors import UserError
from mvp_core.puzzle import Puzzle
from mvp_core.reward import FORMAT_HINT

MASK_SLOT = "[MASKED]"
# A fixed example for the answer format: pool positions in a fixed scrambled order (not derived from
# the answer, so it never leaks it), keeping only positions inside the pool and cut to m, so the
# example names real labels of this puzzle ("C, A, F" for a pool of 7).
_EXAMPLE_POSITIONS = [2, 0, 5, 1, 4, 3, 7, 6]


@dataclass
class PromptConfig:
    """How a puzzle is shown to the model.

    min_pixels / max_pixels: resize bounds per image (and per video frame), in pixels; None keeps the
      processor's own defaults. Visual tokens per image ~= pixels / (28*28).
    video_mode: show the context frames as one video instead of separate images.
    temporal_patch: frames per temporal patch of the model's video encoder (Qwen-VL: 2); video mode
      pads the frames before the gap to a multiple of it.
    number_frames: prefix each context frame with "Frame k:" (helps the model refer to positions).
    instruction: the task text; `{m}` is replaced by the number of masked frames and `{example}` by a
      well-formed example answer.
    system: an optional system message (None: the chat template's default).
    enable_thinking: Qwen3's thinking switch, off by default (apply_template): the answer format asks
      the completion itself to open the think block, which a template that opens it in the prompt
      breaks (the reward then sees no `<think>`); True leaves the template's own thinking prompt.
    """
    min_pixels: int | None = None
    max_pixels: int | None = None
    video_mode: bool = False
    temporal_patch: int = 2
    number_frames: bool = True
    instruction: str = (
        "Choose the {m} options that fill the masked frames, in temporal order. "
        "Think step by step, then give the labels of the chosen options in order. "
        "Answer in the format " + FORMAT_HINT)
    system: str | None = None
    enable_thinking: bool = False
    extra: dict = field(default_factory=dict)   # passed through to the processor call

    def __post_init__(self):
        for name in ("min_pixels", "max_pixels"):
            v = getattr(self, name)
            if v is not None and v < 1:
                raise UserError(f"{name} must be a positive number of pixels, got {v!r}")


def _as_puzzle(p) -> Puzzle:
    if isinstance(p, Puzzle):
        return p
    try:
        return Puzzle.from_dict(p)
    except ValueError as e:        # puzzle.record_problem: one line naming the puzzle
        raise UserError(f"puzzle {p.get('id', '?') if isinstance(p, dict) else '?'}: {e}") from None


def example_answer(m: int, labels: list[str] | None = None) -> str:
    """m labels of the pool `labels` (default A..H) in a fixed order that does not depend on the answer."""
    labels = labels or list("ABCDEFGH")
    order = [i for i in _EXAMPLE_POSITIONS if i < len(labels)]
    order += [i for i in range(len(labels)) if i not in order]
    return ", ".join(labels[i] for i in order[: max(1, min(m, len(labels)))])


def video_layout(pz: Puzzle, temporal_patch: int = 2) -> tuple[list, int]:
    """(the context frames as video frames, how many come before the gap): the frames before the
    gap padded by repeating the last of them to a multiple of `temporal_patch`, and the frames after
    it padded at the end the same way (the processor would repeat the last frame anyway)."""
    before, after = list(pz.context_before), list(pz.context_after)
    pad = lambda fs: fs + [fs[-1]] * (-len(fs) % temporal_patch) if fs else fs
    before = pad(before)
    return before + pad(after), len(before)


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
        frames, _ = video_layout(pz, cfg.temporal_patch)
        t0 = frames[0].t
        n_shown = len(pz.context_before) + len(pz.context_after)
        text(f"This video shows {n_shown} frames of a clip in temporal order. "
             f"{m} consecutive frames are missing ({MASK_SLOT}) ")
        if start == 0:
            text("before the first frame of the video.\n")
        elif start + m == n:
            text(f"after the last frame of the video (at {frames[-1].t - t0:.1f} s).\n")
        else:
            text(f"between frame {start} and frame {start + 1} of the video (between "
                 f"{pz.frames[start - 1].t - t0:.1f} s and {pz.frames[start + m].t - t0:.1f} s).\n")
        parts.append({"type": "video", "video": [f.uri for f in frames]})
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
    text(cfg.instruction.format(m=m, example=example_answer(m, [o.label for o in pz.options])))
    messages = []
    if cfg.system:
        messages.append({"role": "system", "content": [{"type": "text", "text": cfg.system}]})
    messages.append({"role": "user", "content": parts})
    return messages


# A generation prompt that ends inside an open think block (Qwen3 Thinking templates always open one).
_OPEN_THINK = re.compile(r"<think>\s*$")
# What Qwen3's own template writes after the assistant marker when thinking is off: an empty, closed block.
THINKING_OFF = "<think>\n\n</think>\n\n"


def apply_template(tok_or_processor, messages: list[dict], enable_thinking: bool = False) -> str:
    """The one application of a chat template (puzzle prompts and steering prompts alike), ending in the
    assistant's generation prompt. Qwen3-family templates read `enable_thinking` (off: an empty closed
    think block after the assistant marker; on or unset: thinking); other templates ignore it. Off by
    default, as in the published steering code, and because the answer format has the completion open
    its own think block. A template that opens a think block whatever the switch (Qwen3-VL Thinking)
    gets it closed empty when thinking is off, the form Qwen3's template uses."""
    tmpl = getattr(tok_or_processor, "chat_template", None)
    tmpl = " ".join(tmpl.values()) if isinstance(tmpl, dict) else str(tmpl or "")
    # only to a template that reads it: a processor logs a warning per call for any other variable
    kw = {"enable_thinking": enable_thinking} if "enable_thinking" in tmpl else {}
    text = tok_or_processor.apply_chat_template(messages, add_generation_prompt=True, tokenize=False, **kw)
    if not enable_thinking and _OPEN_THINK.search(text):
        text = _OPEN_THINK.sub(THINKING_OFF, text)
    return text


def render_text(processor, puzzle, cfg: PromptConfig | None = None) -> str:
    """The prompt string (chat template applied, one placeholder token per image/video)."""
    cfg = cfg or PromptConfig()
    return apply_template(processor, render_messages(puzzle, cfg), cfg.enable_thinking)


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
                metas.append(_video_metadata(pz, frames, cfg.temporal_patch))
    return images, videos, metas


def _writable(img):
    # torch.from_numpy warns on read-only arrays (np.asarray of a PIL image is one); copying a
    # small frame is cheaper than the warning noise in every rollout log.
    flags = getattr(img, "flags", None)
    return img.copy() if flags is not None and not flags.writeable else img


def _video_metadata(pz: Puzzle, frames, temporal_patch: int = 2) -> dict:
    """The real frame times as indices into the source video at its native rate, counted from the
    first shown frame. Qwen3-VL timestamps each temporal patch from these; Qwen2/2.5-VL take the time
    per patch from len(frames_indices) / total_num_frames * fps, i.e. the frames over the span they
    cover (the gap included). Without metadata the processor assumes 24 fps."""
    layout, _ = video_layout(pz, temporal_patch)
    native = pz.video.fps or pz.sample_fps or 1.0
    t0 = layout[0].t
    idx = [int(round((f.t - t0) * native)) for f in layout]
    h, w = frames[0].shape[:2]
    return {"total_num_frames": max(idx[-1] + 1, len(idx)), "fps": native, "frames_indices": idx,
            "width": w, "height": h}


def _size_kwargs(cfg: PromptConfig, processor) -> dict:
    if cfg.min_pixels is None and cfg.max_pixels is None:
        return {}
    base = processor.image_processor.size
    size = {"shortest_edge": cfg.min_pixels or base["shortest_edge"],
            "longest_edge": cfg.max_pixels or base["longest_edge"]}
    size["shortest_edge"] = min(size["shortest_edge"], size["longest_edge"])
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

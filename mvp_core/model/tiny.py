"""A tiny random-weight Qwen2.5-VL (or Qwen2-VL / Qwen3-VL) plus processor, built fully offline.

Tests, the demo and the UI run the real model code path (processor, chat template, vision tower,
3-D rotary positions, `generate`, a training step) on the CPU with it; only the weights are fake.
No file is downloaded: the tokenizer is a byte-level BPE trained here on a small corpus that
contains the MVP prompt's wording, so prompts tokenize into few tokens and every byte still
round-trips (byte-level BPE covers all 256 bytes)."""
from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass
from pathlib import Path

from mvp_core.reward import FORMAT_HINT, render_answer

# Special tokens in the order Qwen2.5-VL uses them; <|endoftext|> doubles as pad and unk.
SPECIALS = ["<|endoftext|>", "<|im_start|>", "<|im_end|>", "<|vision_start|>", "<|vision_end|>",
            "<|image_pad|>", "<|video_pad|>"]

# Qwen2-VL chat template. It dispatches on content['type'] only: HF `datasets` rows carry every key
# (None-filled), so the official "'video' in content" test would emit an extra <|video_pad|> for
# text parts. Text parts are emitted verbatim (no separators), as in the official template.
CHAT_TEMPLATE = (
    "{% set image_count = namespace(value=0) %}{% set video_count = namespace(value=0) %}"
    "{% for message in messages %}{% if loop.first and message['role'] != 'system' %}"
    "<|im_start|>system\nYou are a helpful assistant.<|im_end|>\n{% endif %}"
    "<|im_start|>{{ message['role'] }}\n"
    "{% if message['content'] is string %}{{ message['content'] }}<|im_end|>\n"
    "{% else %}{% for content in message['content'] %}"
    "{% if content['type'] == 'image' %}"
    "{% set image_count.value = image_count.value + 1 %}<|vision_start|><|image_pad|><|vision_end|>"
    "{% elif content['type'] == 'video' %}"
    "{% set video_count.value = video_count.value + 1 %}<|vision_start|><|video_pad|><|vision_end|>"
    "{% elif content['type'] == 'text' %}{{ content['text'] }}{% endif %}{% endfor %}<|im_end|>\n"
    "{% endif %}{% endfor %}{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}")

# Qwen3-family template: the same turns, and Qwen3's thinking switch after the assistant marker as its
# own template writes it (enable_thinking false: an empty closed think block; unset or true: none, the
# model opens one itself). Lets the tests check what a Qwen3 model sees (mvp_core/model/prompt.py).
_QWEN3_GENERATION = ("{% if add_generation_prompt %}<|im_start|>assistant\n"
                     "{% if enable_thinking is defined and enable_thinking is false %}<think>\n\n</think>\n\n"
                     "{% endif %}{% endif %}")
QWEN3_CHAT_TEMPLATE = CHAT_TEMPLATE.replace(
    "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}", _QWEN3_GENERATION)
CHAT_TEMPLATES = {"qwen2_5_vl": CHAT_TEMPLATE, "qwen2_vl": CHAT_TEMPLATE, "qwen3_vl": QWEN3_CHAT_TEMPLATE}

_TAGS = re.findall(r"</?\w+>", render_answer([], ""))     # <think> </think> <answer> </answer>

# Training text for the BPE: the MVP prompt's words, the answer format and every option label, so
# the tiny tokenizer gives short prompts (speed) while staying a real BPE.
_CORPUS = [
    "system user assistant You are a helpful assistant.",
    "These are the frames of a video in temporal order.",
    "Frame 1: Frame 2: Frame 3: Frame 4: Frame 5: Frame 6: Frame 7: Frame 8: Frame 9: Frame 10:",
    "[MASKED] [MASKED] [MASKED] The masked frames are missing.",
    "Some consecutive frames are masked and marked [MASKED].",
    "Candidate frames: Option A: Option B: Option C: Option D: Option E: Option F: Option G:",
    "Option H: Option I: Option J: Option K: Option L: Option M: Option N: Option O: Option P:",
    "Choose the options that fill the masked frames, in temporal order.",
    "Think step by step, then give the labels of the chosen options in order.",
    # the answer format from its one definition (mvp_core/reward.py): the same text, so the same BPE
    "Answer in the format " + FORMAT_HINT.format(example="C, A, F"),
    " ".join(_TAGS) + " " + render_answer(["B", "D"], "reasoning"),
    "A, B, C, D, E, F, G, H, I, J, K, L, M, N, O, P, Q, R, S, T, U, V, W, X, Y, Z",
    "0 1 2 3 4 5 6 7 8 9 10 11 12 . , : ; ( ) [ ] the frame before after first then next last",
    "The context video shows the frames before and after the gap.",
    "What is happening in this video? A rabbit walks in a green forest. People ride bikes.",
]

# Qwen2-VL patching: 14-px patches, 2x2 merged into one LLM token, 2 frames per temporal patch.
PATCH, MERGE, TEMPORAL = 14, 2, 2
# Vision patch size per model family (Qwen3-VL uses 16-px patches).
PATCHES = {"qwen2_5_vl": 14, "qwen2_vl": 14, "qwen3_vl": 16}


@dataclass
class TinyConfig:
    """Shape of the tiny model. The defaults build ~1.2M parameters and save in well under a second."""
    vocab_size: int = 1024         # BPE vocabulary target (before the special tokens are added)
    hidden: int = 128              # LLM hidden size
    layers: int = 2                # LLM decoder layers
    heads: int = 4
    kv_heads: int = 2
    vision_depth: int = 2
    vision_hidden: int = 64
    # Image resize bounds in pixels: <= 112x112 keeps every image at most 16 visual tokens.
    min_pixels: int = 56 * 56
    max_pixels: int = 112 * 112
    # Merge across spaces, on a corpus holding the MVP prompt's exact sentences: the fixed prompt
    # text becomes a handful of tokens (185 -> ~50 tokens per 4-frame puzzle), which is what makes
    # training on 2 CPU cores affordable. Off for the test preset (its prompts stay word-level).
    phrase_tokens: bool = False


# Named shapes for `mvp tiny-model --preset NAME`.
#   test:  the 0.1 s model of the tests and the demo's random baseline (~1.2M parameters).
#   learn: big enough to learn the generated puzzles (docs/model.md, "Tiny presets") on 2 CPU
#          cores in minutes: LLM 192 wide x 4 layers, vision 96 wide x 2 blocks, images <= 56x56
#          px (4 visual tokens each), phrase-level tokens, ~2.4M parameters.
#   ci:    the CI-sized learning proof's model (docs/BENCHMARKS.md, "Learning proof"), the `learn`
#          preset cut toward a 3-minute run: LLM 128 wide x 2 layers, vision 64 wide x 2 blocks, the
#          same images and tokenizer, ~0.7M parameters (an SFT step of 16 three-frame puzzles takes
#          ~0.3 s of one core against ~0.7 s for `learn`).
PRESETS = {
    "test": TinyConfig(),
    "learn": TinyConfig(vocab_size=2048, hidden=192, layers=4, heads=4, kv_heads=2, vision_depth=2,
                        vision_hidden=96, min_pixels=56 * 56, max_pixels=56 * 56, phrase_tokens=True),
    "ci": TinyConfig(vocab_size=2048, hidden=128, layers=2, heads=4, kv_heads=2, vision_depth=2,
                     vision_hidden=64, min_pixels=56 * 56, max_pixels=56 * 56, phrase_tokens=True),
}


def _prompt_phrases() -> list[str]:
    """The default prompt's fixed sentences for N = 3..12 frames and m = 1..6 masked (prompt.py)."""
    from mvp_core.model.prompt import PromptConfig, example_answer
    out = [f"Frame {i}: " for i in range(1, 13)] + [f"Option {c}: " for c in "ABCDEFGHIJKLMNOP"]
    for n in range(3, 13):
        for m in range(1, 7):
            out.append(f"These are {n} frames of a video in temporal order. "
                       f"{m} consecutive frames are masked and marked [MASKED].\n")
    out += [PromptConfig().instruction.format(m=m, example=example_answer(m)) for m in range(1, 7)]
    return out


def build_tokenizer(cfg: TinyConfig | None = None):
    """Train a byte-level BPE on `_CORPUS` and wrap it with Qwen's specials and chat template:
    a Qwen2Tokenizer (word-level pre-tokenizer, as Qwen's), or with `phrase_tokens` a generic
    fast tokenizer that keeps the trained cross-word merges (Qwen2Tokenizer would reinstate
    its own word-splitting pre-tokenizer on reload)."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast, Qwen2Tokenizer

    cfg = cfg or TinyConfig()
    bpe = Tokenizer(models.BPE())
    bpe.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=not cfg.phrase_tokens)
    if cfg.phrase_tokens:
        # Tags, answer labels, ", " and every digit stay their own pieces: every answer is the
        # same token pattern (<answer> C , A </answer>) whatever the labels, and a number is the
        # same digit tokens wherever it appears (as Qwen's own tokenizer splits digits), so a
        # time written in the think block can be matched against another by its tokens.
        from tokenizers import Regex
        bpe.pre_tokenizer = pre_tokenizers.Sequence([
            pre_tokenizers.Split(Regex(r"<[^<>]*>|[A-Z](?=,|<| |$)|, |[0-9]"), behavior="isolated"),
            bpe.pre_tokenizer])
    bpe.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=cfg.vocab_size, special_tokens=SPECIALS, show_progress=False,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    corpus = _CORPUS + (_prompt_phrases() if cfg.phrase_tokens else [])
    bpe.train_from_iterator(corpus * 20, trainer)
    if cfg.phrase_tokens:
        tok = PreTrainedTokenizerFast(tokenizer_object=bpe, unk_token="<|endoftext|>", eos_token="<|im_end|>",
                                      pad_token="<|endoftext|>", additional_special_tokens=SPECIALS[1:])
    else:
        spec = json.loads(bpe.to_str())
        vocab, merges = spec["model"]["vocab"], spec["model"]["merges"]
        merges = [tuple(m) if isinstance(m, list) else tuple(m.split(" ")) for m in merges]
        tok = Qwen2Tokenizer(vocab=vocab, merges=merges, unk_token="<|endoftext|>", eos_token="<|im_end|>",
                             pad_token="<|endoftext|>")
        tok.add_special_tokens({"additional_special_tokens": SPECIALS[1:]})
    tok.chat_template = CHAT_TEMPLATE
    # Left padding: batched generation appends new tokens on the right of every row.
    tok.padding_side = "left"
    return tok


def build_processor(tok, cfg: TinyConfig | None = None, family: str = "qwen2_5_vl"):
    import transformers
    from transformers import Qwen2VLImageProcessor

    cfg = cfg or TinyConfig()
    patch = PATCHES[family]
    # Same number of visual tokens per image for every family: scale the pixel bounds with the patch.
    k = (patch / PATCH) ** 2
    size = {"shortest_edge": int(cfg.min_pixels * k), "longest_edge": int(cfg.max_pixels * k)}
    common = dict(size=size, patch_size=patch, temporal_patch_size=TEMPORAL, merge_size=MERGE)
    image_processor = Qwen2VLImageProcessor(**common)
    proc_cls, video_cls = {"qwen2_5_vl": ("Qwen2_5_VLProcessor", "Qwen2VLVideoProcessor"),
                           "qwen2_vl": ("Qwen2VLProcessor", "Qwen2VLVideoProcessor"),
                           "qwen3_vl": ("Qwen3VLProcessor", "Qwen3VLVideoProcessor")}[family]
    tok.chat_template = CHAT_TEMPLATES[family]   # the tokenizer (steering's text prompts) as the processor
    # We hand the processor frames we decoded ourselves: never resample them.
    video_processor = getattr(transformers, video_cls)(**common, do_sample_frames=False, cap_pixels_per_frame=True)
    return getattr(transformers, proc_cls)(image_processor=image_processor, tokenizer=tok,
                                           video_processor=video_processor, chat_template=CHAT_TEMPLATES[family])


def build_model(tok, cfg: TinyConfig | None = None, seed: int = 0, family: str = "qwen2_5_vl"):
    import torch
    import transformers

    cfg = cfg or TinyConfig()
    ids = {t: tok.convert_tokens_to_ids(t) for t in SPECIALS}
    head_dim = cfg.hidden // cfg.heads
    # mrope_section splits head_dim/2 rotary frequencies over (time, height, width).
    half = head_dim // 2
    mrope = [half - 2 * (half * 3 // 8), half * 3 // 8, half * 3 // 8]
    text = dict(vocab_size=len(tok), hidden_size=cfg.hidden, intermediate_size=2 * cfg.hidden,
                num_hidden_layers=cfg.layers, num_attention_heads=cfg.heads, num_key_value_heads=cfg.kv_heads,
                max_position_embeddings=8192,
                rope_parameters={"rope_type": "default", "rope_theta": 1e6, "mrope_section": mrope},
                bos_token_id=ids["<|endoftext|>"], eos_token_id=ids["<|im_end|>"],
                pad_token_id=ids["<|endoftext|>"], tie_word_embeddings=False)
    vision = dict(depth=cfg.vision_depth, hidden_size=cfg.vision_hidden, intermediate_size=2 * cfg.vision_hidden,
                  num_heads=4, patch_size=PATCHES[family], spatial_merge_size=MERGE, temporal_patch_size=TEMPORAL)
    if family == "qwen2_5_vl":
        vision.update(out_hidden_size=cfg.hidden, window_size=112, fullatt_block_indexes=[cfg.vision_depth - 1],
                      tokens_per_second=2)
    elif family == "qwen2_vl":
        vision.update(embed_dim=cfg.vision_hidden, hidden_size=cfg.hidden, mlp_ratio=2)
    else:  # qwen3_vl: interleaved M-RoPE, learned vision positions, deepstack features
        text["head_dim"] = head_dim
        text["rope_parameters"]["mrope_interleaved"] = True
        vision.update(out_hidden_size=cfg.hidden, num_position_embeddings=64,
                      deepstack_visual_indexes=[cfg.vision_depth - 1])
    config_cls = {"qwen2_5_vl": "Qwen2_5_VLConfig", "qwen2_vl": "Qwen2VLConfig", "qwen3_vl": "Qwen3VLConfig"}[family]
    model_cls = {"qwen2_5_vl": "Qwen2_5_VLForConditionalGeneration", "qwen2_vl": "Qwen2VLForConditionalGeneration",
                 "qwen3_vl": "Qwen3VLForConditionalGeneration"}[family]
    config = getattr(transformers, config_cls)(
        text_config=text, vision_config=vision,
        image_token_id=ids["<|image_pad|>"], video_token_id=ids["<|video_pad|>"],
        vision_start_token_id=ids["<|vision_start|>"], vision_end_token_id=ids["<|vision_end|>"],
        tie_word_embeddings=False)
    torch.manual_seed(seed)
    model = getattr(transformers, model_cls)(config)
    model.generation_config.eos_token_id = ids["<|im_end|>"]
    model.generation_config.pad_token_id = ids["<|endoftext|>"]
    model.generation_config.bos_token_id = ids["<|endoftext|>"]
    return model


def build_tiny_model(out_dir, seed: int = 0, cfg: TinyConfig | None = None, family: str = "qwen2_5_vl",
                     preset: str | None = None) -> Path:
    """Build a tiny random model + processor of `family` (qwen2_5_vl, qwen2_vl, qwen3_vl) and
    `save_pretrained` both into `out_dir`. `preset` names a shape in PRESETS (instead of `cfg`)."""
    if family not in PATCHES:
        raise ValueError(f"family must be one of {', '.join(PATCHES)}")
    if preset is not None:
        if preset not in PRESETS:
            raise ValueError(f"preset must be one of {', '.join(PRESETS)}")
        cfg = PRESETS[preset]
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    cfg = cfg or TinyConfig()
    tok = build_tokenizer(cfg)
    processor = build_processor(tok, cfg, family)
    model = build_model(tok, cfg, seed=seed, family=family)
    model.save_pretrained(out)
    processor.save_pretrained(out)
    (out / "TINY_MODEL.txt").write_text(
        f"Random-weight {family} built offline by mvp_core.model.tiny (preset {preset or 'custom'}, "
        f"seed {seed}); not a trained model.{os.linesep}")
    return out

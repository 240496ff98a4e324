"""GRPO step benchmark: the real training loop (mvp_core.train.loop.train) on Qwen2.5-VL
with the real 3B and 7B shapes and random weights, 16 context frames per puzzle, G=8.

    .venv/bin/python bench/gpu_grpo.py                 # one GPU: 3B full fine-tune, 7B LoRA (< 8 min on an H200)
    .venv/bin/python bench/gpu_grpo.py --tiny          # the tiny model on the CPU, same table
    .venv/bin/python bench/gpu_grpo.py --set share_prompt=false    # G prompt forwards per puzzle, to compare

Prints per model: step time split into generation / log-probs (forward) / backward / optimizer /
scoring / other bookkeeping, the share of the step outside model compute, peak GPU memory,
samples/s and completion tokens/s (medians over the measured steps, after warm-up steps), and
the ratio of samples/s to Video-R1's 0.25-0.5 samples/s per GPU (7B, 16 frames, G=8, 768 tokens).

Frames are synthetic (smooth random gradients, 640x360 JPEG): the work per step depends on the
number of visual tokens, not on the pixels. The tokenizer is the tiny model's (no weights or
tokenizers can be downloaded here); token ids stay valid for the big vocabularies."""
from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import numpy as np  # noqa: E402
import torch  # noqa: E402

# Qwen2.5-VL-3B/7B-Instruct config.json values (text + vision); weights are random.
SHAPES = {
    "3b": dict(hidden_size=2048, intermediate_size=11008, num_hidden_layers=36, num_attention_heads=16,
               num_key_value_heads=2, vocab_size=151936, tie_word_embeddings=True),
    "7b": dict(hidden_size=3584, intermediate_size=18944, num_hidden_layers=28, num_attention_heads=28,
               num_key_value_heads=4, vocab_size=152064, tie_word_embeddings=False),
}
VISION = dict(depth=32, hidden_size=1280, intermediate_size=3420, num_heads=16, patch_size=14, spatial_merge_size=2,
              temporal_patch_size=2, window_size=112, fullatt_block_indexes=[7, 15, 23, 31], tokens_per_second=2)
VIDEO_R1 = (0.25, 0.5)   # samples/s per GPU, 7B, 16 frames, G=8, 768 completion tokens


def make_puzzles(data: Path, n_puzzles: int, context: int, m: int = 3, l: int = 4, size=(360, 640)) -> Path:
    """Puzzle records with `context` context frames + m masked + l distractors, frames written to
    the frame store; returns the puzzles.jsonl path."""
    from mvp_core.puzzle import LABELS
    from mvp_core.video.frames import FrameStore
    store = FrameStore(data)
    rng = np.random.default_rng(0)
    h, w = size
    yy, xx = np.mgrid[0:h, 0:w]

    def frame():
        a, b, c = rng.uniform(0, 1, 3)
        img = np.stack([(xx * a + yy * b) % 256, (xx * b + yy * c) % 256, (xx * c + yy * a) % 256], -1)
        return img.astype(np.uint8)
    lines = []
    for k in range(n_puzzles):
        n = context + m
        frames = [{"t": float(i), "uri": store.put(frame())} for i in range(n)]
        start = context // 2
        targets = frames[start:start + m]
        pool = [("target", f) for f in targets] + [("neighbor", {"t": n + j, "uri": store.put(frame())}) for j in range(l)]
        order = rng.permutation(len(pool))
        options = [{"label": LABELS[i], "uri": pool[j][1]["uri"], "t": pool[j][1]["t"], "source_video_id": "synthetic",
                    "kind": pool[j][0], "difficulty": 0.5} for i, j in enumerate(order)]
        by_uri = {o["uri"]: o["label"] for o in options}
        lines.append(json.dumps({
            "id": f"bench-{k}", "video": {"id": "synthetic", "path": "", "sha256": "", "fps": 1.0, "duration_s": n,
                                          "width": w, "height": h},
            "frames": frames, "mask": {"start": start, "length": m}, "options": options,
            "answer": [by_uri[f["uri"]] for f in targets],
            "params": {"fps": 1.0, "N": n, "m": m, "l": l}, "sample_fps": 1.0}))
    path = data / "puzzles.jsonl"
    path.write_text("\n".join(lines) + "\n")
    return path


def random_qwen25vl(size: str, tiny_dir: Path, device: str):
    """A random-weight Qwen2.5-VL of the real shape, built on the device, with the tiny
    processor (its special-token ids are put into the config)."""
    from transformers import AutoProcessor, Qwen2_5_VLConfig, Qwen2_5_VLForConditionalGeneration
    processor = AutoProcessor.from_pretrained(str(tiny_dir))
    processor.tokenizer.padding_side = "left"
    tok = processor.tokenizer
    ids = {t: tok.convert_tokens_to_ids(t) for t in ("<|endoftext|>", "<|im_end|>", "<|vision_start|>",
                                                      "<|vision_end|>", "<|image_pad|>", "<|video_pad|>")}
    text = dict(SHAPES[size], max_position_embeddings=128000, rms_norm_eps=1e-6,
                rope_parameters={"rope_type": "default", "rope_theta": 1e6, "mrope_section": [16, 24, 24]},
                bos_token_id=ids["<|endoftext|>"], eos_token_id=ids["<|im_end|>"], pad_token_id=ids["<|endoftext|>"])
    config = Qwen2_5_VLConfig(text_config=text, vision_config=dict(VISION, out_hidden_size=text["hidden_size"]),
                              image_token_id=ids["<|image_pad|>"], video_token_id=ids["<|video_pad|>"],
                              vision_start_token_id=ids["<|vision_start|>"], vision_end_token_id=ids["<|vision_end|>"],
                              tie_word_embeddings=text["tie_word_embeddings"])
    config._attn_implementation = "sdpa"
    with torch.device(device):
        model = Qwen2_5_VLForConditionalGeneration(config)
    model.generation_config.eos_token_id = ids["<|im_end|>"]
    model.generation_config.pad_token_id = ids["<|endoftext|>"]
    return model.float(), processor


def run_case(name: str, overrides: list[str], out: Path, policy=None, steps: int = 3, warmup: int = 1) -> dict:
    from mvp_core.train.config import load_config
    from mvp_core.train.loop import train
    from mvp_core.train.rundir import read_metrics
    cfg = load_config(None, overrides + [f"output_dir={out / name}", f"max_steps={steps}", "save_steps=100000",
                                         "save_completions=true"])
    if torch.cuda.is_available():
        torch.cuda.reset_peak_memory_stats()
    t = time.perf_counter()
    train(cfg, policy=policy)
    wall = time.perf_counter() - t
    rows = read_metrics(out / name)[warmup:]
    med = {k: statistics.median(r[k] for r in rows) for k in rows[0] if isinstance(rows[0][k], (int, float))}
    med["peak_gib"] = torch.cuda.max_memory_allocated() / 2**30 if torch.cuda.is_available() else float("nan")
    med["wall_s"] = wall
    med["name"] = name
    return med


def table(results: list[dict]) -> str:
    cols = [("case", "name", "{}"), ("step s", "step_s", "{:.2f}"), ("gen s", "time/generate_s", "{:.2f}"),
            ("logprob s", "time/logprob_s", "{:.2f}"), ("backward s", "time/backward_s", "{:.2f}"),
            ("optim s", "time/optimizer_s", "{:.3f}"), ("score s", "time/score_s", "{:.4f}"),
            ("other s", "time/other_s", "{:.4f}"), ("outside model %", "outside_pct", "{:.2f}"),
            ("peak GiB", "peak_gib", "{:.1f}"), ("samples/s", "samples_per_s", "{:.2f}"),
            ("tokens/s", "tokens_per_s", "{:.0f}"), ("len", "completion_length", "{:.0f}"),
            ("vs Video-R1", "vs_r1", "{}")]
    lines = ["| " + " | ".join(c[0] for c in cols) + " |", "|" + "---|" * len(cols)]
    for r in results:
        r["outside_pct"] = 100 * (r["time/score_s"] + r["time/other_s"]) / r["step_s"]
        # the ratio only means something for the 7B case on a GPU (Video-R1's setting)
        r["vs_r1"] = (f"{r['samples_per_s'] / VIDEO_R1[1]:.1f}x-{r['samples_per_s'] / VIDEO_R1[0]:.1f}x"
                      if r["name"].startswith("7b") else "n/a")
        lines.append("| " + " | ".join(fmt.format(r[key]) for _, key, fmt in cols) + " |")
    return "\n".join(lines)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--tiny", action="store_true", help="the tiny random model on the CPU")
    ap.add_argument("--models", default="3b,7b", help="GPU cases: 3b (full fine-tune), 7b (LoRA), 7b-full")
    ap.add_argument("--steps", type=int, default=3, help="steps per case (the first is warm-up)")
    ap.add_argument("--completion", type=int, default=768, help="max_completion_length on the GPU")
    ap.add_argument("--frames", type=int, default=16, help="context frames per puzzle")
    ap.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                    help="a GRPOConfig override for every case (e.g. share_prompt=false, gradient_checkpointing=false)")
    args = ap.parse_args(argv)

    from mvp_core.model.tiny import build_tiny_model
    tmp = Path(tempfile.mkdtemp(prefix="gpu_grpo_"))
    tiny = build_tiny_model(tmp / "tiny", seed=0)
    t = time.perf_counter()
    puzzles = make_puzzles(tmp / "data", n_puzzles=4, context=args.frames)
    print(f"puzzles: {time.perf_counter() - t:.1f}s, {args.frames} context frames + 3 masked + 4 distractors", flush=True)
    common = [f"puzzles={puzzles}", "num_generations=8", "reward=mvp", "seed=0", "learning_rate=1e-6"]
    sets = args.set        # last, so they win over each case's own settings
    results = []
    if args.tiny or not torch.cuda.is_available():
        if not args.tiny:
            print("no GPU: running the tiny model on the CPU (--tiny)")
        os.environ.setdefault("MVP_FORCE_CPU", "1")
        steps = max(args.steps, 6)
        results.append(run_case("tiny-cpu", common + [
            f"model={tiny}", "per_device_train_batch_size=8", "gradient_accumulation_steps=1",
            "max_completion_length=64", "max_pixels=3136", "video_mode=true", *sets], tmp / "runs", steps=steps,
            warmup=2))
    else:
        # Video-R1's setting: 16 frames at most 128x28x28 pixels, G=8, 768 completion tokens.
        gpu = common + ["per_device_train_batch_size=4", "gradient_accumulation_steps=2", "logprob_batch_size=4",
                        f"max_completion_length={args.completion}", "max_pixels=100352", "video_mode=true",
                        "bf16=true", "gradient_checkpointing=true", "freeze_vision=true"]
        for case in args.models.split(","):
            size = case.split("-")[0]
            lora = case == "7b"        # 7B full fine-tune with fp32 AdamW state does not fit one 141 GB GPU
            t = time.perf_counter()
            policy = random_qwen25vl(size, tiny, "cuda")
            print(f"{case}: built in {time.perf_counter() - t:.1f}s, "
                  f"{sum(p.numel() for p in policy[0].parameters()) / 1e9:.2f}B params", flush=True)
            extra = ["lora=true", "lora_r=64", "lora_alpha=128"] if lora else []
            results.append(run_case(f"{case}{'-lora' if lora else '-full'}", gpu + extra + [f"model={tiny}", *sets],
                                    tmp / "runs", policy=policy, steps=args.steps))
            del policy
            torch.cuda.empty_cache()
    print()
    print(table(results))
    print(f"\nmedians over steps after warm-up; device: "
          f"{torch.cuda.get_device_name() if torch.cuda.is_available() and not args.tiny else 'CPU'}; "
          f"torch threads {torch.get_num_threads()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

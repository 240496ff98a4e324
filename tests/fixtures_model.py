"""Fixtures for the model-side tests: the tiny Qwen2.5-VL and puzzles over real frames.

The puzzles are made here from frames decoded (PyAV) from the real sample videos, so the prompt,
reward and rollout tests do not depend on the synthesis pipeline; `test_rollout_e2e.py` runs the
full `mvp synth` -> `mvp rollout` -> `mvp eval` path on top."""
from __future__ import annotations

import json
import random
from pathlib import Path

import numpy as np
import pytest

from mvp_core.puzzle import LABELS, stable_id


def decode_frames(path: Path, fps: float, max_s: float) -> list[tuple[float, np.ndarray]]:
    """(t, HxWx3 uint8) at `fps` for the first `max_s` seconds, downscaled to 320 px wide."""
    import av
    out, next_t = [], 0.0
    with av.open(str(path)) as c:
        stream = c.streams.video[0]
        for frame in c.decode(stream):
            t = float(frame.pts * stream.time_base)
            if t > max_s:
                break
            if t + 1e-6 >= next_t:
                out.append((round(t, 3), frame.to_ndarray(format="rgb24", width=320, height=180)))
                next_t += 1.0 / fps
    return out


def make_puzzles(video: Path, data: Path, *, fps: float, max_s: float, k: int, seed: int,
                 n: int = 8, m: int = 3, l: int = 4) -> list[dict]:
    """k hand-made puzzle records over real frames of `video` (contiguous keyframes, neighbour
    distractors), frames written as JPEG under data/frames/<video stem>/."""
    from PIL import Image
    frames = decode_frames(video, fps, max_s)
    vid = video.stem
    fdir = data / "frames" / vid
    fdir.mkdir(parents=True, exist_ok=True)
    uris = []
    for i, (t, arr) in enumerate(frames):
        uri = f"frames/{vid}/{i:04d}.jpg"
        Image.fromarray(arr).save(data / uri, quality=90)
        uris.append((t, uri))
    rng = random.Random(seed)
    out = []
    for j in range(k):
        # keyframes every other sampled frame; distractors are the frames in between (neighbours)
        span = 2 * n
        s0 = rng.randrange(0, len(uris) - span)
        keys = uris[s0:s0 + span:2]
        between = uris[s0 + 1:s0 + span:2]
        start = rng.randrange(1, n - m)
        targets = keys[start:start + m]
        distract = rng.sample(between, l)
        pool = [("target", t, u) for t, u in targets] + [("neighbor", t, u) for t, u in distract]
        rng.shuffle(pool)
        options = [{"label": LABELS[i], "uri": u, "t": t, "source_video_id": vid, "kind": kind,
                    "difficulty": 1.0 if kind == "target" else round(rng.uniform(0.3, 0.95), 3)}
                   for i, (kind, t, u) in enumerate(pool)]
        by_uri = {o["uri"]: o["label"] for o in options}
        out.append({
            "id": stable_id(vid, s0, start, j, seed),
            "video": {"id": vid, "path": str(video), "sha256": vid, "fps": 25.0, "duration_s": max_s,
                      "width": 320, "height": 180},
            "frames": [{"t": t, "uri": u} for t, u in keys],
            "mask": {"start": start, "length": m},
            "options": options,
            "answer": [by_uri[u] for _, u in targets],
            "params": {"fps": fps, "N": n, "m": m, "l": l, "kappa": 0.9, "embedder": "none", "seed": seed,
                       "synth_version": "test"},
            "sample_fps": fps,
        })
    return out


def dir_loader(data: Path):
    from PIL import Image

    def load(uri: str) -> np.ndarray:
        return np.array(Image.open(data / uri).convert("RGB"))
    return load


@pytest.fixture(scope="session")
def tiny_model_dir(tmp_path_factory) -> Path:
    from mvp_core.model.tiny import build_tiny_model
    return build_tiny_model(tmp_path_factory.mktemp("tiny_qwen25vl"), seed=0)


@pytest.fixture(scope="session")
def model_data(tmp_path_factory, sample_videos) -> tuple[Path, list[dict]]:
    """(data dir, puzzle records): 2 puzzles from bikes.mp4 and 2 from the trailer (scene cuts),
    written to data/puzzles.jsonl as well."""
    data = tmp_path_factory.mktemp("model_data")
    recs = make_puzzles(sample_videos["bikes"], data, fps=4.0, max_s=9.5, k=2, seed=1)
    recs += make_puzzles(sample_videos["trailer_bbb"], data, fps=1.0, max_s=24.0, k=2, seed=2)
    (data / "puzzles.jsonl").write_text("".join(json.dumps(r) + "\n" for r in recs))
    return data, recs


@pytest.fixture(scope="session")
def tiny_policy(tiny_model_dir):
    from mvp_core.model.policy import load_policy
    return load_policy(tiny_model_dir, dtype="float32", device="cpu")


@pytest.fixture(scope="module")
def torch_one_thread():
    """One torch thread while a module runs: on a shared 2-core machine two spinning OpenMP threads
    make the tiny model's generate ~10x slower (bench/rollout.py measures it). Restored after."""
    import torch
    n = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(n)


def tiny_causal_lm(hidden: int = 64, layers: int = 4):
    """(model, tokenizer): a random-weight Qwen2 causal LM with the project's tiny BPE tokenizer, seeded,
    in eval mode, its generation config ending on the tokenizer's eos (the steering tests' plain LLM)."""
    import torch
    from transformers import Qwen2Config, Qwen2ForCausalLM

    from mvp_core.model.tiny import build_tokenizer
    tok = build_tokenizer()
    cfg = Qwen2Config(vocab_size=len(tok), hidden_size=hidden, intermediate_size=2 * hidden, num_hidden_layers=layers,
                      num_attention_heads=4, num_key_value_heads=2, pad_token_id=tok.pad_token_id,
                      eos_token_id=tok.eos_token_id, bos_token_id=tok.pad_token_id)
    torch.manual_seed(0)
    model = Qwen2ForCausalLM(cfg).eval()
    model.generation_config.pad_token_id = tok.pad_token_id
    model.generation_config.eos_token_id = tok.eos_token_id
    return model, tok


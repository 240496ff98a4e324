"""mvp synth on the real sample videos: the record contract, determinism, idempotence, kill-and-resume,
the ambiguity guard, the Ray engine and the CLIP embedder."""
from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
from fixtures_synth import cut_segment
from sqlalchemy import func, select

from app.cli import main
from db.engine import open_db
from db.models import Option, Puzzle, SynthFile
from mvp_core.synth.embed import PixelEmbedder
from mvp_core.video.frames import FrameStore

pytestmark = pytest.mark.slow
ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def corpus(sample_videos, tmp_path_factory) -> Path:
    d = tmp_path_factory.mktemp("corpus")
    for name in ("bikes", "bigbuckbunny", "carphone_pristine"):
        shutil.copy(sample_videos[name], d / f"{name}.mp4")
    cut_segment(sample_videos["trailer_bbb"], d / "trailer_20s.mp4", 4.0, 20.0)
    return d


@pytest.fixture(scope="module")
def first_run(corpus, tmp_path_factory):
    data = tmp_path_factory.mktemp("data1")
    t0 = time.perf_counter()
    assert main(["synth", str(corpus), "--data", str(data), "--quiet"]) == 0
    return data, time.perf_counter() - t0


def load_records(data: Path) -> list[dict]:
    return [json.loads(line) for line in (data / "puzzles.jsonl").read_text().splitlines()]


def test_records_follow_the_contract(first_run):
    data, _ = first_run
    recs = load_records(data)
    # bikes and the trailer segment give puzzles; bigbuckbunny (5 s, slow) and carphone (static) are skipped
    assert len(recs) >= 3 and len({r["video"]["id"] for r in recs}) == 2
    store = FrameStore(data)
    for r in recs:
        assert set(r) >= {"id", "video", "frames", "mask", "options", "answer", "params"}
        n, m, l = r["params"]["N"], r["params"]["m"], r["params"]["l"]
        assert len(r["frames"]) == n and r["mask"]["length"] == m and len(r["options"]) == m + l
        ts = [f["t"] for f in r["frames"]]
        assert ts == sorted(ts) and len(set(ts)) == n
        assert 1 <= r["mask"]["start"] and r["mask"]["start"] + m <= n - 1  # context on both sides
        targets = r["frames"][r["mask"]["start"]:r["mask"]["start"] + m]
        by_label = {o["label"]: o for o in r["options"]}
        assert [by_label[a]["uri"] for a in r["answer"]] == [f["uri"] for f in targets]
        assert [o["label"] for o in r["options"]] == list("ABCDEFG")
        assert sum(o["kind"] == "target" for o in r["options"]) == m
        for o in r["options"]:
            assert not o["uri"].startswith("/") and store.path(o["uri"]).is_file()
            assert 0.0 <= o["difficulty"] <= 1.0


def test_ambiguity_guard_holds_on_stored_frames(first_run):
    """No two targets, and no distractor and a target or a shown frame, are near-duplicates
    (similarity >= kappa), recomputed here from the stored JPEGs."""
    data, _ = first_run
    store, emb = FrameStore(data), PixelEmbedder()
    for r in load_records(data):
        kappa = r["params"]["kappa"]
        T = emb.embed([store.load(o["uri"]) for o in r["options"] if o["kind"] == "target"])
        D = emb.embed([store.load(o["uri"]) for o in r["options"] if o["kind"] != "target"])
        s, m = r["mask"]["start"], r["mask"]["length"]
        S = emb.embed([store.load(f["uri"]) for f in r["frames"][:s] + r["frames"][s + m:]])
        tt = T @ T.T
        assert (tt[np.triu_indices(len(T), 1)] < kappa).all()
        assert (D @ T.T).max() < kappa and (D @ S.T).max() < kappa and (T @ S.T).max() < kappa


def test_short_video_sampled_faster_and_static_one_skipped(first_run):
    data, _ = first_run
    recs = load_records(data)
    bikes = [r for r in recs if r["video"]["path"].endswith("bikes.mp4")]
    assert bikes and all(r["sample_fps"] > 1.0 for r in bikes)  # 10 s video: too short at 1 fps
    Session_ = open_db(None, data)
    with Session_() as s:
        row = s.scalars(select(SynthFile).where(SynthFile.path.like("%carphone_pristine.mp4"))).one()
        bbb = s.scalars(select(SynthFile).where(SynthFile.path.like("%bigbuckbunny.mp4"))).one()
    assert row.status == "skipped" and "distinct keyframes" in row.reason and "fps" in row.reason
    # every frame of a 5 s slow pan is a near-duplicate of some keyframe: no sound distractor exists
    assert bbb.status == "skipped" and "ambiguity guard" in bbb.reason


def test_deterministic_byte_identical(first_run, corpus, tmp_path):
    data, _ = first_run
    assert main(["synth", str(corpus), "--data", str(tmp_path), "--quiet", "--workers", "2"]) == 0
    assert (tmp_path / "puzzles.jsonl").read_bytes() == (data / "puzzles.jsonl").read_bytes()
    # a different seed gives different puzzles
    other = tmp_path / "seed1"
    assert main(["synth", str(corpus), "--data", str(other), "--quiet", "--seed", "1"]) == 0
    assert {r["id"] for r in load_records(other)}.isdisjoint({r["id"] for r in load_records(data)})


def test_idempotent_second_run(first_run, corpus, capsys):
    data, first_s = first_run
    before = (data / "puzzles.jsonl").read_bytes()
    assert main(["synth", str(corpus), "--data", str(data), "--quiet"]) == 0
    out = capsys.readouterr().out
    assert "0 new puzzles" in out and "0 videos done" in out, out     # every video skipped as handled, none redone
    assert (data / "puzzles.jsonl").read_bytes() == before


def test_kill_minus_9_then_resume(first_run, corpus, tmp_path):
    clean, _ = first_run
    src, killed = corpus, tmp_path / "killed"
    Session_ = open_db(None, killed)  # schema first, so polling never races the child's migration
    cmd = [sys.executable, "-m", "app.cli", "synth", str(src), "--data", str(killed), "--quiet"]
    proc = subprocess.Popen(cmd, cwd=ROOT, start_new_session=True)
    deadline = time.time() + 120
    while time.time() < deadline:  # kill as soon as the first video is committed, mid-run
        with Session_() as s:
            if s.scalar(select(func.count()).select_from(SynthFile)):
                break
        time.sleep(0.05)
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    with Session_() as s:
        partial = s.scalar(select(func.count()).select_from(SynthFile))
    assert 1 <= partial < 4, "the kill must land mid-run"  # the corpus holds 4 videos
    assert main(["synth", str(src), "--data", str(killed), "--quiet"]) == 0
    assert (killed / "puzzles.jsonl").read_bytes() == (clean / "puzzles.jsonl").read_bytes()
    with Session_() as s:
        for pid, n in s.execute(select(Puzzle.id, Puzzle.n_options)):
            assert s.scalar(select(func.count()).select_from(Option).where(Option.puzzle_id == pid)) == n
    store = FrameStore(killed)  # every referenced frame is a whole JPEG (a killed write leaves only a temp name)
    for r in load_records(killed):
        for o in r["options"]:
            assert store.load(o["uri"]).ndim == 3


def test_ray_engine_matches_local(first_run, corpus, tmp_path):
    data, _ = first_run
    out = tmp_path / "ray"
    assert main(["synth", str(corpus), "--data", str(out), "--engine", "ray", "--workers", "2", "--quiet"]) == 0
    assert (out / "puzzles.jsonl").read_bytes() == (data / "puzzles.jsonl").read_bytes()


def test_clip_embedder_from_local_tiny_checkpoint(sample_videos, tmp_path):
    import torch
    from transformers import CLIPConfig, CLIPImageProcessor, CLIPModel

    from mvp_core.synth.embed import ClipEmbedder
    from mvp_core.video.decode import iter_frames
    torch.manual_seed(0)
    cfg = CLIPConfig(text_config=dict(hidden_size=32, intermediate_size=64, num_hidden_layers=1,
                                      num_attention_heads=2, vocab_size=99),
                     vision_config=dict(hidden_size=32, intermediate_size=64, num_hidden_layers=1,
                                        num_attention_heads=2, image_size=32, patch_size=8),
                     projection_dim=16)
    ckpt = tmp_path / "tiny-clip"
    CLIPModel(cfg).save_pretrained(ckpt)
    CLIPImageProcessor(size={"shortest_edge": 32}, crop_size={"height": 32, "width": 32}).save_pretrained(ckpt)
    frames = [f for _, f in iter_frames(sample_videos["bikes"], 2.0, 640)]
    E = ClipEmbedder(str(ckpt)).embed(frames)
    assert E.shape == (len(frames), 16) and np.allclose(np.linalg.norm(E, axis=1), 1, atol=1e-5)
    sims = (E[1:] * E[:-1]).sum(1)
    kappa = float(np.percentile(sims, 60))  # random weights: calibrate kappa on the video, as for pixel
    data = tmp_path / "data"
    assert main(["synth", str(sample_videos["bikes"]), "--data", str(data), "--quiet", "--embedder",
                 f"clip:{ckpt}", "--kappa", f"{kappa:.6f}", "--fps", "2"]) == 0
    recs = load_records(data)
    assert recs and all(r["params"]["embedder"] == f"clip:{ckpt}" for r in recs)
    assert main(["synth", str(sample_videos["bikes"]), "--data", str(data), "--embedder", "clip:/nonexistent"]) == 2

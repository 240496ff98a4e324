"""All the work for one video, as one function that a worker process (or a Ray task) runs:
hash, probe, stream-decode at the sampling rate, embed, plan puzzles, write the used frames to the
frame store, and return the puzzle records. Nothing here touches the database."""
from __future__ import annotations

import resource
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np

from mvp_core.errors import VideoError
from mvp_core.puzzle import LABELS, SYNTH_VERSION, Frame, Mask, Option, Puzzle, VideoInfo, stable_id
from mvp_core.synth.embed import EmbedderSpec
from mvp_core.synth.config import SynthConfig
from mvp_core.synth.plan import Layout, count_keyframes, plan_puzzles
from mvp_core.video.decode import check_file, file_sha256, iter_frames, native_fps, pick_indices, probe, sample_times
from mvp_core.video.frames import FrameStore, encode_jpeg

EMBED_BATCH = 32


def sampling_rates(meta, cfg: SynthConfig) -> list[float]:
    """The rates to try, slowest first. Short videos: sample faster, up to the native rate, while the
    sample stays under 8 (N + l) frames. The fastest rate is decoded once and the slower rates are
    subsets of it, so trying them costs one decode pass."""
    native = native_fps(meta)
    rates = [min(cfg.fps, native)]
    while rates[-1] < native * 0.99 and meta.duration_s * rates[-1] * 2 <= 8 * (cfg.n + cfg.l):
        rates.append(min(native, rates[-1] * 2))
    return rates


@dataclass
class VideoResult:
    path: str
    ok: bool
    reason: str = ""
    video: dict | None = None
    records: list[dict] = field(default_factory=list)
    sample_fps: float = 0.0
    n_sampled: int = 0
    n_frames_written: int = 0
    seconds: float = 0.0
    peak_rss_mb: float = 0.0     # the worker process's peak resident memory so far


def process_video(path: str, cfg: SynthConfig, data_dir: str) -> VideoResult:
    t0 = time.perf_counter()
    try:
        res = _process(Path(path), cfg, data_dir)
    except VideoError as e:
        res = VideoResult(path, False, str(e))
    except MemoryError:
        res = VideoResult(path, False, "ran out of memory while decoding")
    except Exception as e:  # a decoder bug on one file must not stop the run; keep the reason to one line
        res = VideoResult(path, False, f"unexpected {type(e).__name__}: {str(e).splitlines()[0][:150] if str(e) else ''}")
    res.seconds = time.perf_counter() - t0
    res.peak_rss_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return res


def _process(path: Path, cfg: SynthConfig, data_dir: str) -> VideoResult:
    check_file(path)
    sha = file_sha256(path)
    meta = probe(path)
    embedder = EmbedderSpec.parse(cfg.embedder).build()
    kappa = cfg.kappa if cfg.kappa is not None else embedder.default_kappa
    native = native_fps(meta)
    seed = int(stable_id(cfg.seed, sha)[:8], 16)
    rates = sampling_rates(meta, cfg)
    all_times, all_E, all_jpegs = _sample(path, rates[-1], cfg.max_side, embedder)
    if not all_times:
        raise VideoError("no decodable frames")
    for fps in rates:
        keep = pick_indices(np.asarray(all_times), sample_times(all_times[-1] + 1.0 / rates[-1], fps))
        times, E, jpegs = [all_times[i] for i in keep], all_E[keep], [all_jpegs[i] for i in keep]
        layouts, reason = plan_puzzles(E, cfg, kappa, seed)
        if layouts:
            break
    else:
        found = count_keyframes(E, kappa)
        raise VideoError(f"{reason}; {len(times)} frames sampled at {fps:.3g} fps, "
                         f"{found} distinct keyframes found")
    duration = meta.duration_s if meta.duration_s > 0 else times[-1]
    video = VideoInfo(id=sha[:16], path=str(path), sha256=sha, fps=round(native, 4),
                      duration_s=round(duration, 4), width=meta.width, height=meta.height)
    store = FrameStore(data_dir)
    used = sorted({i for lay in layouts for i in lay.seq + lay.distractors})
    uris = {i: store.put_bytes(jpegs[i]) for i in used}
    for uri in uris.values():  # the curation page shows thumbnails: make them now, not on the first click
        store.thumbnail(uri)
    records = [_record(lay, video, times, uris, cfg, kappa, fps).to_dict() for lay in layouts]
    return VideoResult(str(path), True, "", asdict(video), records, fps, len(times), len(used))


def _sample(path: Path, fps: float, max_side: int, embedder) -> tuple[list[float], np.ndarray, list[bytes]]:
    """Stream frames once: keep each frame's JPEG bytes (small) and embedding, never the pixels."""
    times: list[float] = []
    jpegs: list[bytes] = []
    embs: list[np.ndarray] = []
    batch: list[np.ndarray] = []
    for t, img in iter_frames(path, fps, max_side):
        times.append(round(t, 4))
        jpegs.append(encode_jpeg(img))
        batch.append(img)
        if len(batch) == EMBED_BATCH:
            embs.append(embedder.embed(batch))
            batch = []
    if batch:
        embs.append(embedder.embed(batch))
    E = np.concatenate(embs) if embs else np.zeros((0, 1), np.float32)
    return times, E, jpegs


def _record(lay: Layout, video: VideoInfo, times: list[float], uris: dict[int, str], cfg: SynthConfig,
            kappa: float, fps: float) -> Puzzle:
    targets = lay.seq[lay.mask_start:lay.mask_start + cfg.m]
    label_of = {idx: LABELS[k] for k, idx in enumerate(lay.order)}
    options = [Option(label=label_of[idx], uri=uris[idx], t=times[idx], source_video_id=video.id,
                      kind="target" if idx in targets else lay.kind,
                      difficulty=1.0 if idx in targets else round(lay.difficulty[idx], 4))
               for idx in lay.order]
    params = {"fps": cfg.fps, "N": cfg.n, "m": cfg.m, "l": cfg.l, "kappa": kappa, "embedder": cfg.embedder,
              "seed": cfg.seed, "synth_version": SYNTH_VERSION, "tail": cfg.tail, "hardness": cfg.hardness,
              "per_video": cfg.per_video, "max_side": cfg.max_side}
    pid = stable_id(video.sha256, cfg.key(), lay.seq, lay.mask_start)
    return Puzzle(id=pid, video=video, frames=[Frame(t=times[i], uri=uris[i]) for i in lay.seq],
                  mask=Mask(start=lay.mask_start, length=cfg.m), options=options,
                  answer=[label_of[i] for i in targets], params=params, sample_fps=round(fps, 4))

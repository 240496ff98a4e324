"""All the work for one video, as one function that a worker process (or a Ray task) runs:
hash, probe, stream-decode at the sampling rate, embed, plan puzzles, write the used frames to the
frame store, and return the puzzle records. Nothing here touches the database.

Embeddings are computed from the stored JPEG bytes (decoded again), so the ambiguity guard holds on
the frames as stored and an audit that re-embeds them sees the same similarities. Flat frames (no
spatial contrast: black, white, one colour) are dropped before the walk and counted.

`progress`, when given, is called with a dict as the work advances (probe done with the time limit
the duration implies, then every few decoded frames): the local workers forward it to the parent,
which kills a worker that stops making progress (mvp_core.synth.workers)."""
from __future__ import annotations

import resource
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np

from mvp_core.errors import VideoError
from mvp_core.puzzle import LABELS, SYNTH_VERSION, Frame, Mask, Option, Puzzle, VideoInfo, stable_id
from mvp_core.synth.config import SynthConfig
from mvp_core.synth.embed import EmbedderSpec, decode_jpeg, is_flat
from mvp_core.synth.plan import Layout, count_keyframes, plan_puzzles
from mvp_core.video.decode import (MAX_GAP_S, check_file, file_sha256, iter_frames, native_fps, pick_indices, probe,
                                    sample_times)
from mvp_core.video.frames import FrameStore, encode_jpeg

EMBED_BATCH = 32
PROGRESS_EVERY = 1      # sampled frames between progress reports (the worker throttles to 2 per second)
DONORS_PER_VIDEO = 32   # frames (evenly spaced) a video offers other videos' puzzles as cross-video distractors
# Time limit per file from its probed size: LIMIT_BASE_S + LIMIT_SAFETY x the expected work (generous:
# a hang is caught sooner by the no-progress watchdog; this bounds a decode that crawls), where
# decode runs at DECODE_PIXELS_PER_S (decord, 720p ~500 frame/s on one core, measured here) and each
# sampled frame costs PER_SAMPLE_S (JPEG encode + decode + embed, measured ~3 ms at 640 px).
LIMIT_BASE_S = 60.0
LIMIT_SAFETY = 20.0
DECODE_PIXELS_PER_S = 4.6e8
PER_SAMPLE_S = 0.005
# Sampled frames kept per video: the planner's similarity matrix is quadratic in it (3600: 52 MB) and
# every sample's JPEG is held until the plan is made. Without a cap a 10-hour video at 1 fps needed
# ~10 GB. A longer video keeps every 2nd, 4th, ... sample (thinned while decoding, so a container
# that misstates its duration is covered too): it is sampled at --fps / 2, / 4, ...
MAX_SAMPLES = 3600  # even, so every kept sample stays on the thinned grid
Progress = Callable[[dict], None]


def time_limit_s(meta, sample_fps: float) -> float | None:
    """Seconds a file of this size may take; None when the container does not say its duration."""
    if meta.duration_s <= 0:
        return None
    native = native_fps(meta)
    n_native = meta.n_frames or meta.duration_s * native
    work = n_native * meta.width * meta.height / DECODE_PIXELS_PER_S + meta.duration_s * sample_fps * PER_SAMPLE_S
    return LIMIT_BASE_S + LIMIT_SAFETY * work


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
    n_flat: int = 0              # sampled frames dropped as flat (no spatial contrast)
    # With --cross-video: embeddings of the frames the records use, and frames other videos' puzzles
    # may take as distractors [(t, jpeg bytes, embedding)] (mvp_core.synth.cross_video).
    embeddings: dict = field(default_factory=dict)
    donors: list = field(default_factory=list)
    seconds: float = 0.0
    peak_rss_mb: float = 0.0     # the worker process's peak resident memory so far


def process_video(path: str, cfg: SynthConfig, data_dir: str, progress: Progress | None = None) -> VideoResult:
    t0 = time.perf_counter()
    try:
        res = _process(Path(path), cfg, data_dir, progress or (lambda info: None))
    except VideoError as e:
        res = VideoResult(path, False, str(e))
    except MemoryError:
        res = VideoResult(path, False, "ran out of memory while decoding")
    except Exception as e:  # a decoder bug on one file must not stop the run; keep the reason to one line
        res = VideoResult(path, False, f"unexpected {type(e).__name__}: {str(e).splitlines()[0][:150] if str(e) else ''}")
    res.seconds = time.perf_counter() - t0
    res.peak_rss_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return res


def smaller_shapes(cfg: SynthConfig) -> list[SynthConfig]:
    """The shapes `adapt` tries after (N, l), nearest first (fewest frames given up; at a tie, N kept):
    N down to m + 2 (one context frame each side of the gap), l down to 2. The guard is not loosened."""
    lo_n = cfg.m + (1 if cfg.tail else 2)
    shapes = [(n, l) for n in range(cfg.n, lo_n - 1, -1) for l in range(cfg.l, 1, -1) if (n, l) != (cfg.n, cfg.l)]
    shapes.sort(key=lambda s: ((cfg.n - s[0]) + (cfg.l - s[1]), cfg.n - s[0]))
    return [cfg.model_copy(update={"n": n, "l": l}) for n, l in shapes]


def fewer_masked(cfg: SynthConfig) -> list[SynthConfig]:
    """For the skip reason only (adapt never changes m, the puzzle's task): the most permissive shape
    (N = m + 2, l = 2) for each smaller m, largest m first."""
    return [cfg.model_copy(update={"m": m, "n": m + (1 if cfg.tail else 2), "l": min(cfg.l, 2)})
            for m in range(cfg.m - 1, 0, -1)]


def _process(path: Path, cfg: SynthConfig, data_dir: str, progress: Progress) -> VideoResult:
    check_file(path)
    sha = file_sha256(path)
    progress({"phase": "hashed"})
    meta = probe(path)
    rates = sampling_rates(meta, cfg)
    progress({"phase": "probed", "duration_s": meta.duration_s, "limit_s": time_limit_s(meta, rates[-1])})
    embedder = _embedder(cfg.embedder, progress)
    kappa = cfg.kappa if cfg.kappa is not None else embedder.default_kappa
    native = native_fps(meta)
    seed = int(stable_id(cfg.seed, sha)[:8], 16)
    all_times, all_E, all_jpegs, flat, stride = _sample_thinned(path, rates[-1], cfg.max_side, embedder, progress)
    if stride > 1:  # a long video: the slowest rate is what is left after thinning
        rates = [rates[-1] / stride]
    if not all_times:
        raise VideoError("no decodable frames")
    if flat.all():
        raise VideoError(f"all {len(all_times)} sampled frames are flat (one colour, no picture)")
    def plan_at(shape: SynthConfig):
        for fps in rates:  # the slowest rate that gives a puzzle: faster sampling makes continuity easier
            grid = pick_indices(np.asarray(all_times), sample_times(all_times[-1] + 1.0 / rates[-1], fps))
            keep = [i for i in grid if not flat[i]]
            layouts, reason = plan_puzzles(all_E[keep], shape, kappa, seed)
            if layouts:
                break
        return fps, grid, keep, layouts, reason

    fps, grid, keep, layouts, reason = plan_at(cfg)
    admitting = None
    if not layouts:
        for shape in smaller_shapes(cfg):
            if plan_at(shape)[3]:
                admitting = shape
                break
        if admitting is not None and cfg.adapt:
            cfg = admitting
            fps, grid, keep, layouts, reason = plan_at(cfg)
    n_flat = len(grid) - len(keep)
    times, jpegs = [all_times[i] for i in keep], [all_jpegs[i] for i in keep]
    if not layouts:
        found = count_keyframes(all_E[keep], kappa)
        if admitting is not None:
            hint = f"; --n {admitting.n} --l {admitting.l} (or --adapt) would admit it"
        else:
            fewer = next((shape for shape in fewer_masked(cfg) if plan_at(shape)[3]), None)
            hint = "; no shape down to N=m+2, l=2 passes the guard" + (
                f" (fewer masked frames would: --m {fewer.m} --n {fewer.n} --l {fewer.l})" if fewer is not None
                else ", nor one with fewer masked frames")
        raise VideoError(f"{reason}; {len(keep)} frames sampled at {fps:.3g} fps"
                         + (f" ({n_flat} flat dropped)" if n_flat else "") + f", {found} distinct keyframes found"
                         + hint)
    # the container's duration, unless it is unknown or hours past the last frame (a wrapped timestamp)
    duration = meta.duration_s if 0 < meta.duration_s <= all_times[-1] + MAX_GAP_S else times[-1]
    video = VideoInfo(id=sha[:16], path=str(path), sha256=sha, fps=round(native, 4),
                      duration_s=round(duration, 4), width=meta.width, height=meta.height)
    store = FrameStore(data_dir)
    used = sorted({i for lay in layouts for i in lay.seq + lay.distractors})
    uris = {i: store.put_bytes(jpegs[i]) for i in used}
    for uri in uris.values():  # the curation page shows thumbnails: make them now, not on the first click
        store.thumbnail(uri)
    records = [_record(lay, video, times, uris, cfg, kappa, fps).to_dict() for lay in layouts]
    res = VideoResult(str(path), True, "", asdict(video), records, fps, len(times), len(used), n_flat)
    if cfg.cross_video:
        E = all_E[keep]
        res.embeddings = {uris[i]: E[i] for i in used}
        step = max(1, len(keep) // DONORS_PER_VIDEO)
        res.donors = [(times[i], jpegs[i], E[i]) for i in range(0, len(keep), step)][:DONORS_PER_VIDEO]
    return res


_EMBEDDERS: dict[str, object] = {}
EMBEDDER_LOAD_S = 300.0  # loading a CLIP checkpoint reports no progress; the watchdog allows this long


def _embedder(spec: str, progress: Progress):
    """One embedder per worker process (a CLIP model is loaded once, not once per video)."""
    if spec not in _EMBEDDERS:
        if spec != "pixel":
            progress({"phase": "loading embedder", "quiet_s": EMBEDDER_LOAD_S})
        _EMBEDDERS[spec] = EmbedderSpec.parse(spec).build()
        progress({"phase": "embedder ready"})
    return _EMBEDDERS[spec]


def _sample(path: Path, fps: float, max_side: int, embedder, progress: Progress,
            ) -> tuple[list[float], np.ndarray, list[bytes], np.ndarray]:
    return _sample_thinned(path, fps, max_side, embedder, progress)[:4]


def _sample_thinned(path: Path, fps: float, max_side: int, embedder, progress: Progress,
                    ) -> tuple[list[float], np.ndarray, list[bytes], np.ndarray, int]:
    """Stream frames once: keep each frame's JPEG bytes (small), the embedding of those bytes as
    stored, and whether it is flat; never the pixels. Past MAX_SAMPLES every other sample is dropped
    and from then on only every `stride`-th decoded sample is kept (returned last)."""
    times: list[float] = []
    jpegs: list[bytes] = []
    embs: list[np.ndarray] = []
    flat: list[bool] = []
    batch: list[np.ndarray] = []
    stride = 1
    for n, (t, img) in enumerate(iter_frames(path, fps, max_side)):
        if (n + 1) % PROGRESS_EVERY == 0:  # thinned-out samples are progress too (the watchdog)
            progress({"phase": "decoding", "frames": n + 1})
        if n % stride:
            continue
        times.append(round(t, 4))
        jpegs.append(encode_jpeg(img))
        stored = decode_jpeg(jpegs[-1])
        flat.append(is_flat(stored))
        batch.append(stored)
        if len(batch) == EMBED_BATCH:
            embs.append(embedder.embed(batch))
            batch = []
        if len(times) > MAX_SAMPLES:
            if batch:
                embs.append(embedder.embed(batch))
                batch = []
            embs = [np.concatenate(embs)[::2]]
            times, jpegs, flat = times[::2], jpegs[::2], flat[::2]
            stride *= 2
    if batch:
        embs.append(embedder.embed(batch))
    E = np.concatenate(embs) if embs else np.zeros((0, 1), np.float32)
    return times, E, jpegs, np.asarray(flat, bool), stride


def _record(lay: Layout, video: VideoInfo, times: list[float], uris: dict[int, str], cfg: SynthConfig,
            kappa: float, fps: float) -> Puzzle:
    targets = lay.seq[lay.mask_start:lay.mask_start + cfg.m]
    label_of = {idx: LABELS[k] for k, idx in enumerate(lay.order)}
    options = [Option(label=label_of[idx], uri=uris[idx], t=times[idx], source_video_id=video.id,
                      kind="target" if idx in targets else lay.kinds[idx],
                      difficulty=1.0 if idx in targets else round(lay.difficulty[idx], 4))
               for idx in lay.order]
    params = {"fps": cfg.fps, "N": cfg.n, "m": cfg.m, "l": cfg.l, "kappa": kappa, "embedder": cfg.embedder,
              "seed": cfg.seed, "synth_version": SYNTH_VERSION, "tail": cfg.tail, "hardness": cfg.hardness,
              "per_video": cfg.per_video, "max_side": cfg.max_side,
              "max_overlap": cfg.max_overlap, "cross_video": cfg.cross_video}
    pid = stable_id(video.sha256, cfg.key(), lay.seq, lay.mask_start)
    return Puzzle(id=pid, video=video, frames=[Frame(t=times[i], uri=uris[i]) for i in lay.seq],
                  mask=Mask(start=lay.mask_start, length=cfg.m), options=options,
                  answer=[label_of[i] for i in targets], params=params, sample_fps=round(fps, 4))

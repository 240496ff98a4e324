"""The shortcut audit's solvers: cheap heuristics that answer a puzzle without understanding the video.
Each maps (puzzle, features) -> ordered labels. If one scores far above chance, a model can learn the
heuristic instead of the video (docs/SYNTHESIS.md "Shortcut audit").

- random:           m options in a random order (the chance level, measured)
- boundary:         continuity at the gap: options most similar to the frames just before and after
                    it, ordered along the path from the left frame to the right one
- context_boundary: first drop options that resemble any shown frame (similarity >= kappa: a
                    distractor copied from the context), then `boundary` on the rest
- histogram:        colour-histogram nearest neighbour: options whose colours best match some context
                    frame, ordered by the position of that frame
- stats_position:   each option's temporal position from image statistics (mean colour, contrast,
                    edge density) interpolated between the frames around the gap
- jpeg_size:        the same with the JPEG size per pixel (detail, motion blur)
- brightness_trend: the same with mean brightness, extrapolated from a linear fit over all shown frames"""
from __future__ import annotations

from collections.abc import Callable

import numpy as np

from mvp_core.puzzle import Puzzle, stable_id
from mvp_core.synth.embed import PixelEmbedder

LoadFrame = Callable[[str], np.ndarray]
FrameSize = Callable[[str], int]
_PIXEL = PixelEmbedder()


class FeatureCache:
    """Per-uri features, so a frame shared by several puzzles is read once. `frame_size(uri)` gives
    the stored JPEG's byte count (None: re-encode the loaded frame at the store's quality)."""

    def __init__(self, load_frame: LoadFrame, frame_size: FrameSize | None = None):
        self.load_frame = load_frame
        self.frame_size = frame_size
        self._cache: dict[tuple[str, str], np.ndarray] = {}

    def _get(self, kind: str, uri: str, fn) -> np.ndarray:
        key = (kind, uri)
        if key not in self._cache:
            self._cache[key] = fn(uri)
        return self._cache[key]

    def embedding(self, uri: str) -> np.ndarray:
        return self._get("emb", uri, lambda u: _PIXEL.embed([self.load_frame(u)])[0])

    def histogram(self, uri: str) -> np.ndarray:
        def hist(u):
            q = (self.load_frame(u) // 32).reshape(-1, 3).astype(np.int64)  # 8 bins per channel
            h = np.bincount(q[:, 0] * 64 + q[:, 1] * 8 + q[:, 2], minlength=512).astype(np.float64)
            return h / max(h.sum(), 1.0)
        return self._get("hist", uri, hist)

    def stats(self, uri: str) -> np.ndarray:
        """[mean R, G, B, contrast, edge density, brightness] on the 0-255 scale."""
        def st(u):
            img = self.load_frame(u).astype(np.float32)
            grey = img.mean(axis=2)
            edges = _mean_abs_diff(grey, 0) + _mean_abs_diff(grey, 1)
            bright = float((img * np.array([0.299, 0.587, 0.114], np.float32)).sum(axis=2).mean())
            return np.array([*img.reshape(-1, 3).mean(axis=0), grey.std(), edges, bright])
        return self._get("stats", uri, st)

    def jpeg_size(self, uri: str) -> np.ndarray:
        def size(u):
            img = self.load_frame(u)
            if self.frame_size is not None:
                n = self.frame_size(u)
            else:
                from mvp_core.video.frames import encode_jpeg
                n = len(encode_jpeg(img))
            return np.array([n / (img.shape[0] * img.shape[1])])
        return self._get("jpeg", uri, size)


def _mean_abs_diff(a: np.ndarray, axis: int) -> float:
    """0 along an axis of length 1 (a 1-pixel-tall video's frames): the mean of nothing is NaN, and
    one NaN cost made linear_sum_assignment abort the whole audit."""
    d = np.abs(np.diff(a, axis=axis))
    return float(d.mean()) if d.size else 0.0


def _shown(p: Puzzle) -> list[tuple[int, str]]:
    return [(i, f.uri) for i, f in enumerate(p.frames) if not (p.mask.start <= i < p.mask.start + p.mask.length)]


def solve_random(p: Puzzle, feats: FeatureCache) -> list[str]:
    rng = np.random.default_rng(int(stable_id("random-solver", p.id)[:8], 16))
    labels = [o.label for o in p.options]
    return [labels[i] for i in rng.permutation(len(labels))[:p.mask.length]]


def _boundary(p: Puzzle, feats: FeatureCache, options) -> list[str]:
    left = feats.embedding(p.frames[p.mask.start - 1].uri) if p.mask.start > 0 else None
    after = p.frames[p.mask.start + p.mask.length:]
    right = feats.embedding(after[0].uri) if after else None
    scored = []
    for o in options:
        e = feats.embedding(o.uri)
        sl = float(e @ left) if left is not None else float(e @ right)
        sr = float(e @ right) if right is not None else sl
        scored.append((sl + sr, sl - sr, o.label))
    best = sorted(scored, key=lambda x: -x[0])[:p.mask.length]
    return [lab for _, _, lab in sorted(best, key=lambda x: -x[1])]  # nearest the left frame first


def solve_boundary(p: Puzzle, feats: FeatureCache) -> list[str]:
    return _boundary(p, feats, p.options)


def solve_context_boundary(p: Puzzle, feats: FeatureCache) -> list[str]:
    kappa = float(p.params.get("kappa", 0.95))
    shown = np.stack([feats.embedding(u) for _, u in _shown(p)])
    like_shown = {o.label: float((shown @ feats.embedding(o.uri)).max()) for o in p.options}
    kept = [o for o in p.options if like_shown[o.label] < kappa]
    if len(kept) < p.mask.length:  # not enough left: take back the least context-like
        rest = sorted((o for o in p.options if o not in kept), key=lambda o: like_shown[o.label])
        kept += rest[:p.mask.length - len(kept)]
    return _boundary(p, feats, kept)


def solve_histogram(p: Puzzle, feats: FeatureCache) -> list[str]:
    context = [(i, feats.histogram(u)) for i, u in _shown(p)]
    scored = []
    for o in p.options:
        h = feats.histogram(o.uri)
        sim, pos = max((float(np.minimum(h, hc).sum()), i) for i, hc in context)
        scored.append((sim, pos, o.label))
    best = sorted(scored, key=lambda x: -x[0])[:p.mask.length]
    return [lab for _, _, lab in sorted(best, key=lambda x: (x[1], -x[0]))]


def _gap_predictions(p: Puzzle, feature, trend: bool) -> np.ndarray:
    """Predicted feature at each gap position: linear interpolation between the frames around the gap
    (trend=False; extrapolated from the last two shown frames at the tail), or a least-squares line
    over all shown frames (trend=True)."""
    shown = _shown(p)
    pos = np.array([i for i, _ in shown], np.float64)
    F = np.stack([feature(u) for _, u in shown])
    gap = np.arange(p.mask.start, p.mask.start + p.mask.length, dtype=np.float64)
    li = [k for k, (i, _) in enumerate(shown) if i < p.mask.start]
    ri = [k for k, (i, _) in enumerate(shown) if i >= p.mask.start + p.mask.length]
    if trend or not li or (not ri and len(li) < 2):
        A = np.stack([pos, np.ones_like(pos)], axis=1)
        coef, *_ = np.linalg.lstsq(A, F, rcond=None)
        return np.stack([gap, np.ones_like(gap)], axis=1) @ coef
    a, b = (li[-1], ri[0]) if ri else (li[-2], li[-1])
    w = (gap - pos[a]) / (pos[b] - pos[a])
    return F[a] + w[:, None] * (F[b] - F[a])


def _assign(p: Puzzle, feature, trend: bool = False) -> list[str]:
    """Options matched one-to-one to the gap positions by the distance of their feature to the
    prediction there (Hungarian assignment), read out in position order."""
    from scipy.optimize import linear_sum_assignment
    pred = _gap_predictions(p, feature, trend)
    opts = np.stack([feature(o.uri) for o in p.options])
    scale = np.stack([feature(u) for _, u in _shown(p)] + list(opts)).std(axis=0) + 1e-6
    cost = np.linalg.norm((pred[:, None, :] - opts[None, :, :]) / scale, axis=2)
    rows, cols = linear_sum_assignment(cost)
    return [p.options[c].label for _, c in sorted(zip(rows, cols))]


def solve_stats_position(p: Puzzle, feats: FeatureCache) -> list[str]:
    return _assign(p, lambda u: feats.stats(u)[:5])


def solve_jpeg_size(p: Puzzle, feats: FeatureCache) -> list[str]:
    return _assign(p, feats.jpeg_size)


def solve_brightness_trend(p: Puzzle, feats: FeatureCache) -> list[str]:
    return _assign(p, lambda u: feats.stats(u)[5:6], trend=True)


SOLVERS: dict[str, Callable[[Puzzle, FeatureCache], list[str]]] = {
    "random": solve_random, "boundary": solve_boundary, "context_boundary": solve_context_boundary,
    "histogram": solve_histogram, "stats_position": solve_stats_position, "jpeg_size": solve_jpeg_size,
    "brightness_trend": solve_brightness_trend,
}

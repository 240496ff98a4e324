"""The one bootstrap behind every interval the studio shows (docs/ARCHITECTURE.md): it resamples VIDEOS, not
puzzles, because puzzles of one video are correlated (same footage, overlapping frames); resampling
puzzles makes intervals too narrow (tests/test_bootstrap.py measures the coverage of both).

Hand-written, not scipy.stats.bootstrap: scipy resamples independent observations only."""
from __future__ import annotations

import functools
from collections.abc import Hashable, Sequence
from dataclasses import dataclass

import numpy as np

RESAMPLES = 2000   # percentile intervals' tails are stable to ~0.005 at this count on the studio's sizes
LEVEL = 0.95


@dataclass(frozen=True)
class Interval:
    mean: float
    lo: float
    hi: float
    n: int          # observations (puzzles or answers)
    clusters: int   # videos

    def fmt(self, digits: int = 3) -> str:
        return f"{self.mean:.{digits}f} [{self.lo:.{digits}f}, {self.hi:.{digits}f}]"


def _cluster_sums(values: np.ndarray, clusters: Sequence[Hashable]) -> tuple[np.ndarray, np.ndarray]:
    keys = {c: i for i, c in enumerate(dict.fromkeys(clusters))}
    idx = np.fromiter((keys[c] for c in clusters), dtype=np.int64, count=len(clusters))
    sums = np.bincount(idx, weights=values, minlength=len(keys))
    counts = np.bincount(idx, minlength=len(keys)).astype(np.float64)
    return sums, counts


def cluster_mean_ci(values: Sequence[float], clusters: Sequence[Hashable], resamples: int = RESAMPLES,
                    level: float = LEVEL, seed: int = 0, strata: Sequence[Hashable] | None = None) -> Interval:
    """Mean of `values` with a percentile interval from resampling whole clusters (videos) with
    replacement; each resample's mean is over the observations it holds (a ratio estimator).
    `strata` (one per observation, constant within a cluster): clusters are resampled within each
    stratum, so each stratum keeps its number of clusters (e.g. several runs pooled, each kept whole)."""
    v = np.asarray(values, dtype=np.float64)
    if len(v) != len(clusters) or (strata is not None and len(strata) != len(v)):
        raise ValueError("values, clusters and strata differ in length")
    if len(v) == 0:
        return Interval(float("nan"), float("nan"), float("nan"), 0, 0)
    keyed = list(zip(strata, clusters)) if strata is not None else list(clusters)
    sums, counts = _cluster_sums(v, keyed)
    k = len(sums)
    mean = float(v.mean())
    if k < 2:
        return Interval(mean, mean, mean, len(v), k)
    if strata is None:
        picks = _picks(k, resamples, seed)
    else:
        rng = np.random.default_rng(seed)
        of_stratum: dict[Hashable, list[int]] = {}
        for i, key in enumerate(dict.fromkeys(keyed)):
            of_stratum.setdefault(key[0], []).append(i)
        picks = np.concatenate([np.asarray(ix)[rng.integers(0, len(ix), size=(resamples, len(ix)))]
                                for ix in of_stratum.values()], axis=1)
    return _percentiles(sums, counts, picks, mean, len(v), level)


def cluster_sums_cis(sums: Sequence[Sequence[float]], counts: Sequence[float], resamples: int = RESAMPLES,
                     level: float = LEVEL, seed: int = 0) -> list[Interval]:
    """`cluster_mean_ci` from each cluster's sum and count of observations (what a database's GROUP BY
    video gives), so a table of 10^5 answers never comes into Python row by row: the same resampling
    of clusters and the same interval as `cluster_mean_ci` on the observations themselves, for
    several measures over the same clusters (one row of `sums` each), drawn once for all of them."""
    counts = np.asarray(counts, dtype=np.float64)
    rows = [np.asarray(r, dtype=np.float64) for r in sums]
    k, n = len(counts), float(counts.sum())
    if k == 0 or n == 0:
        return [Interval(float("nan"), float("nan"), float("nan"), 0, 0) for _ in rows]
    means = [float(r.sum() / n) for r in rows]
    if k < 2:
        return [Interval(m, m, m, int(n), k) for m in means]
    picks = _picks(k, resamples, seed)
    return [_percentiles(r, counts, picks, m, int(n), level) for r, m in zip(rows, means)]


@functools.lru_cache(maxsize=4)
def _picks(k: int, resamples: int, seed: int) -> np.ndarray:
    """Which clusters each resample draws (with replacement). Kept for the last few (k, resamples,
    seed): drawing 2000 x 500 indices costs more than using them, and a table's groups (one per
    distractor kind, over the same videos) ask for the same draw again. Read-only, being shared."""
    picks = np.random.default_rng(seed).integers(0, k, size=(resamples, k))
    picks.setflags(write=False)
    return picks


def _percentiles(sums: np.ndarray, counts: np.ndarray, picks: np.ndarray, mean: float, n: int,
                 level: float) -> Interval:
    stats = sums[picks].sum(axis=1) / counts[picks].sum(axis=1)
    a = (1 - level) / 2
    lo, hi = np.quantile(stats, [a, 1 - a])
    return Interval(mean, float(lo), float(hi), n, len(sums))


def cluster_diff_ci(a: Sequence[float], b: Sequence[float], clusters: Sequence[Hashable],
                    resamples: int = RESAMPLES, level: float = LEVEL, seed: int = 0) -> Interval:
    """Paired difference mean(a - b) over the same observations (e.g. two models on the same puzzles),
    resampling clusters."""
    d = np.asarray(a, dtype=np.float64) - np.asarray(b, dtype=np.float64)
    return cluster_mean_ci(d, clusters, resamples, level, seed)


def ci(values: Sequence[float], clusters: Sequence[Hashable], seed: int = 0) -> tuple[float, float]:
    """The (lo, hi) of cluster_mean_ci at the defaults: what a table cell shows. (0, 0) when empty."""
    if len(values) == 0:
        return 0.0, 0.0
    iv = cluster_mean_ci(values, clusters, seed=seed)
    return iv.lo, iv.hi

"""The shortcut audit: can cheap pixel heuristics solve the puzzles? If they can, a model may learn
the heuristic instead of the video. Each solver maps (puzzle, load_frame) -> ordered labels.

- random:    m options in a random order (the chance level, measured)
- boundary:  continuity at the gap: options most similar to the frames just before and after it,
             ordered along the path from the left frame to the right one
- histogram: colour-histogram nearest neighbour: options whose colours best match some context frame,
             ordered by the position of that frame"""
from __future__ import annotations

import math
from collections import defaultdict
from typing import Callable

import numpy as np

from mvp_core.puzzle import Puzzle, stable_id
from mvp_core.reward import score_prediction
from mvp_core.synth.embed import PixelEmbedder

LoadFrame = Callable[[str], np.ndarray]
_PIXEL = PixelEmbedder()


class FeatureCache:
    """Per-uri features, so a frame shared by several puzzles is read once."""

    def __init__(self, load_frame: LoadFrame):
        self.load_frame = load_frame
        self.emb: dict[str, np.ndarray] = {}
        self.hist: dict[str, np.ndarray] = {}

    def embedding(self, uri: str) -> np.ndarray:
        if uri not in self.emb:
            self.emb[uri] = _PIXEL.embed([self.load_frame(uri)])[0]
        return self.emb[uri]

    def histogram(self, uri: str) -> np.ndarray:
        if uri not in self.hist:
            img = self.load_frame(uri)
            q = (img // 32).reshape(-1, 3).astype(np.int64)  # 8 bins per channel
            h = np.bincount(q[:, 0] * 64 + q[:, 1] * 8 + q[:, 2], minlength=512).astype(np.float64)
            self.hist[uri] = h / max(h.sum(), 1.0)
        return self.hist[uri]


def solve_random(p: Puzzle, feats: FeatureCache) -> list[str]:
    rng = np.random.default_rng(int(stable_id("random-solver", p.id)[:8], 16))
    labels = [o.label for o in p.options]
    return [labels[i] for i in rng.permutation(len(labels))[:p.mask.length]]


def solve_boundary(p: Puzzle, feats: FeatureCache) -> list[str]:
    left = feats.embedding(p.frames[p.mask.start - 1].uri)
    after = p.context_after
    right = feats.embedding(after[0].uri) if after else None
    scored = []
    for o in p.options:
        e = feats.embedding(o.uri)
        sl = float(e @ left)
        sr = float(e @ right) if right is not None else sl
        scored.append((sl + sr, sl - sr, o.label))
    best = sorted(scored, key=lambda x: -x[0])[:p.mask.length]
    return [lab for _, _, lab in sorted(best, key=lambda x: -x[1])]  # nearest the left frame first


def solve_histogram(p: Puzzle, feats: FeatureCache) -> list[str]:
    context = [(i, feats.histogram(f.uri)) for i, f in enumerate(p.frames)
               if not (p.mask.start <= i < p.mask.start + p.mask.length)]
    scored = []
    for o in p.options:
        h = feats.histogram(o.uri)
        sims = [(float(np.minimum(h, hc).sum()), i) for i, hc in context]
        sim, pos = max(sims)
        scored.append((sim, pos, o.label))
    best = sorted(scored, key=lambda x: -x[0])[:p.mask.length]
    return [lab for _, _, lab in sorted(best, key=lambda x: (x[1], -x[0]))]


SOLVERS: dict[str, Callable[[Puzzle, FeatureCache], list[str]]] = {
    "random": solve_random, "boundary": solve_boundary, "histogram": solve_histogram,
}


def distractor_kind(p: Puzzle) -> str:
    kinds = sorted({o.kind for o in p.options if o.kind != "target"})
    return "+".join(kinds) or "none"


def chance_exact(p: Puzzle) -> float:
    """Probability that m labels drawn in random order from the pool equal the answer."""
    k = len(p.options)
    return 1.0 / math.perm(k, p.mask.length)


def audit(puzzles: list[Puzzle], load_frame: LoadFrame, solvers: list[str] | None = None) -> dict:
    """Mean reward and exact match per solver, overall and per distractor kind, against chance."""
    feats = FeatureCache(load_frame)
    names = solvers or list(SOLVERS)
    rows: dict[str, dict[str, list]] = {n: defaultdict(list) for n in names}
    for p in puzzles:
        pool = [o.label for o in p.options]
        kind = distractor_kind(p)
        for n in names:
            t = score_prediction(SOLVERS[n](p, feats), p.answer, pool)
            for group in ("all", kind):
                rows[n][group].append((t.total, t.exact))
    groups = sorted({g for n in names for g in rows[n]}, key=lambda g: (g != "all", g))
    report = {"n_puzzles": len(puzzles), "groups": {}}
    for g in groups:
        members = [p for p in puzzles if g == "all" or distractor_kind(p) == g]
        report["groups"][g] = {
            "n": len(members),
            "chance_exact": float(np.mean([chance_exact(p) for p in members])) if members else 0.0,
            "solvers": {n: {"mean_reward": _mean([r for r, _ in rows[n][g]]),
                            "exact": _mean([e for _, e in rows[n][g]])} for n in names},
        }
    return report


def _mean(xs: list[float]) -> float:
    return float(np.mean(xs)) if xs else 0.0


def format_table(report: dict) -> str:
    lines = [f"shortcut audit over {report['n_puzzles']} puzzles",
             f"{'group':<16}{'n':>5}  {'solver':<10}{'reward':>8}{'exact':>8}{'chance exact':>14}"]
    for g, r in report["groups"].items():
        for i, (n, s) in enumerate(r["solvers"].items()):
            lines.append(f"{(g if i == 0 else ''):<16}{(r['n'] if i == 0 else ''):>5}  {n:<10}"
                         f"{s['mean_reward']:>8.3f}{s['exact']:>8.3f}{(r['chance_exact'] if i == 0 else ''):>14.4}"
                         if i == 0 else
                         f"{'':<16}{'':>5}  {n:<10}{s['mean_reward']:>8.3f}{s['exact']:>8.3f}")
    return "\n".join(lines)

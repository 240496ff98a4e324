"""MVP puzzle synthesis on one video's sampled frames (docs/ARCHITECTURE.md, "The method", steps 2-5), pure computation.

Input: the sampled frame times and their L2-normalised embeddings. Output: puzzle layouts (indices
into the sampled frames); mvp_core.synth.job turns them into records with frame uris."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from mvp_core.synth.config import SynthConfig


@dataclass
class Layout:
    """One puzzle in sample indices."""
    seq: list[int]                 # N keyframe indices, temporal order
    mask_start: int
    distractors: list[int]
    difficulty: dict[int, float]   # distractor index -> max similarity to a target
    order: list[int]               # option order: sample indices, shuffled
    kind: str                      # distractor kind


def _walk(E: np.ndarray, start: int, kappa: float, limit: int) -> list[int]:
    """Walk forward from `start`, keeping a frame only if its similarity to the last kept <= kappa."""
    kept = [start]
    for i in range(start + 1, len(E)):
        if len(kept) == limit:
            break
        if float(E[i] @ E[kept[-1]]) <= kappa:
            kept.append(i)
    return kept


def keyframe_walk(E: np.ndarray, start: int, n: int, kappa: float) -> list[int] | None:
    """N keyframes from `start`, or None when the video runs out first."""
    kept = _walk(E, start, kappa, n)
    return kept if len(kept) == n else None


def count_keyframes(E: np.ndarray, kappa: float) -> int:
    """How many keyframes a walk from the first frame finds: tells if the sampling is too sparse."""
    return len(_walk(E, 0, kappa, len(E))) if len(E) else 0


def mine_distractors(E: np.ndarray, seq: list[int], mask_start: int, cfg: SynthConfig, kappa: float,
                     rng: np.random.Generator) -> tuple[list[int], dict[int, float], str] | None:
    """l distractors from the same video. The ambiguity guard drops any candidate whose similarity
    to some target is >= kappa, any frame shown during the masked run itself (it belongs in the gap),
    and any near-duplicate of an already chosen distractor. Hard = most similar to what surrounds the
    gap (the targets and the context frames on either side), which is what a continuity shortcut uses."""
    targets = seq[mask_start:mask_start + cfg.m]
    to_targets = (E @ E[targets].T).max(axis=1)
    bounds = [seq[mask_start - 1]] + ([seq[mask_start + cfg.m]] if mask_start + cfg.m < len(seq) else [])
    hardness = 0.5 * to_targets + 0.5 * (E @ E[bounds].T).mean(axis=1)
    allowed = np.ones(len(E), bool)
    allowed[seq] = False
    allowed[seq[mask_start - 1] + 1:(seq[mask_start + cfg.m] if mask_start + cfg.m < len(seq) else targets[-1] + 1)] = False
    allowed &= to_targets < kappa
    if cfg.hardness == "hard":
        span = seq[-1] - seq[0]
        pad = max(int(round(span * cfg.neighbourhood)), len(seq))
        lo, hi = max(0, seq[0] - pad), min(len(E), seq[-1] + pad + 1)
        window = np.zeros(len(E), bool)
        window[lo:hi] = True
        cands = np.flatnonzero(allowed & window)
        if len(cands) < cfg.l:                  # a sparse neighbourhood: widen to the whole video
            cands = np.flatnonzero(allowed)
        cands = cands[np.argsort(-hardness[cands], kind="stable")]
        kind = "neighbor"
    else:
        cands = rng.permutation(np.flatnonzero(allowed))
        kind = "random"
    chosen: list[int] = []
    for c in cands:
        if all(float(E[c] @ E[d]) < kappa for d in chosen):
            chosen.append(int(c))
            if len(chosen) == cfg.l:
                break
    if len(chosen) < cfg.l:
        return None
    chosen.sort()
    return chosen, {c: float(np.clip(hardness[c], 0.0, 1.0)) for c in chosen}, kind


def plan_puzzles(E: np.ndarray, cfg: SynthConfig, kappa: float, seed: int) -> tuple[list[Layout], str]:
    """Up to K layouts from different start times; ("", []) reasons explain an empty result."""
    rng = np.random.default_rng(seed)
    layouts: list[Layout] = []
    seen: set[tuple[int, ...]] = set()
    no_seq = no_distractors = 0
    for start in rng.permutation(len(E)):
        seq = keyframe_walk(E, int(start), cfg.n, kappa)
        if seq is None:
            no_seq += 1
            continue
        if tuple(seq) in seen:
            continue
        hi = cfg.n - cfg.m if cfg.tail else cfg.n - cfg.m - 1
        mask_start = int(rng.integers(1, hi + 1))
        targets = seq[mask_start:mask_start + cfg.m]
        mined = mine_distractors(E, seq, mask_start, cfg, kappa, rng)
        if mined is None:
            no_distractors += 1
            continue
        distractors, difficulty, kind = mined
        seen.add(tuple(seq))
        order = [int(i) for i in rng.permutation(targets + distractors)]
        layouts.append(Layout(seq, mask_start, distractors, difficulty, order, kind))
        if len(layouts) == cfg.per_video:
            break
    reason = ""
    if not layouts:
        reason = (f"no start time gives {cfg.n} distinct keyframes (kappa={kappa})" if no_distractors == 0
                  else f"too few frames pass the ambiguity guard for {cfg.l} distractors (kappa={kappa})")
    return layouts, reason

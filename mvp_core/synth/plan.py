"""MVP puzzle synthesis on one video's sampled frames (docs/ARCHITECTURE.md, "The method", steps 2-5), pure computation.

Input: the sampled frame times and their L2-normalised embeddings. Output: puzzle layouts (indices
into the sampled frames); mvp_core.synth.job turns them into records with frame uris.

Beyond the research's walk: a puzzle is only kept when no two of its targets, and no target and a
shown frame, are near-duplicates (similarity >= kappa), so the order and the choice are decidable;
the ambiguity guard keeps every distractor below kappa to every shown frame and every target; and
puzzles of one video overlap at most `max_overlap` (docs/SYNTHESIS.md)."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from mvp_core.synth.config import SynthConfig  # noqa: F401  (where the synthesis code has always imported it from)


@dataclass
class Layout:
    """One puzzle in sample indices."""
    seq: list[int]                 # N keyframe indices, temporal order
    mask_start: int
    distractors: list[int]
    difficulty: dict[int, float]   # distractor index -> max similarity to a target, in [0, 1]
    order: list[int]               # option order: sample indices, shuffled
    kinds: dict[int, str]          # distractor index -> kind ("neighbor", "neighbor_widened", "random")


def similarities(E: np.ndarray) -> np.ndarray:
    """All pairwise similarities of one video's samples, computed once: the planner reads this matrix
    (many small products against E are far slower, BLAS start-up per call dominates)."""
    return (E @ E.T).astype(np.float32, copy=False)


_NEAR = 64  # samples searched first for the next keyframe (usually a few frames on)


def _walk(S: np.ndarray, start: int, kappa: float, limit: int) -> list[int]:
    """Walk forward from `start`, keeping a frame only if its similarity to the last kept <= kappa.
    Each step searches the column in numpy, a near window first: a per-element Python loop made a
    static video (no step ever found, every start walks to the end) quadratic in Python time."""
    kept = [start]
    while len(kept) < limit:
        k = kept[-1]
        near = np.flatnonzero(S[k + 1:k + 1 + _NEAR, k] <= kappa)
        if near.size:
            kept.append(k + 1 + int(near[0]))
            continue
        far = np.flatnonzero(S[k + 1 + _NEAR:, k] <= kappa)
        if not far.size:
            break
        kept.append(k + 1 + _NEAR + int(far[0]))
    return kept


def keyframe_walk(S: np.ndarray, start: int, n: int, kappa: float) -> list[int] | None:
    """N keyframes from `start`, or None when the video runs out first (S: `similarities`)."""
    kept = _walk(S, start, kappa, n)
    return kept if len(kept) == n else None


def count_keyframes(E: np.ndarray, kappa: float) -> int:
    """How many keyframes a walk from the first frame finds: tells if the sampling is too sparse."""
    return len(_walk(similarities(E), 0, kappa, len(E))) if len(E) else 0


def targets_decidable(S: np.ndarray, seq: list[int], mask_start: int, m: int, kappa: float) -> bool:
    """No two targets alike (their order would be undecidable) and no target like a shown frame (the
    shown frame would give it away, or two options would fit one slot)."""
    targets = seq[mask_start:mask_start + m]
    shown = seq[:mask_start] + seq[mask_start + m:]
    tt = S[np.ix_(targets, targets)].copy()
    np.fill_diagonal(tt, -1.0)
    return bool(tt.max(initial=-1.0) < kappa and S[np.ix_(targets, shown)].max(initial=-1.0) < kappa)


def mine_distractors(S: np.ndarray, seq: list[int], mask_start: int, cfg: SynthConfig, kappa: float,
                     rng: np.random.Generator) -> tuple[list[int], dict[int, float], dict[int, str]] | None:
    """l distractors from the same video. The ambiguity guard drops any candidate whose similarity
    to any target or any shown context frame is >= kappa, any frame shown during the masked run itself
    (it belongs in the gap), and any near-duplicate of an already chosen distractor. Hard = most
    similar to what surrounds the gap (the targets and the context frames on either side), which is
    what a continuity shortcut uses; `difficulty` stores the max similarity to a target (the field's
    documented meaning), the blend only ranks."""
    targets = seq[mask_start:mask_start + cfg.m]
    after = seq[mask_start + cfg.m] if mask_start + cfg.m < len(seq) else None
    to_targets = S[:, targets].max(axis=1)
    to_shown = S[:, seq].max(axis=1)
    bounds = [seq[mask_start - 1]] + ([after] if after is not None else [])
    hardness = 0.5 * to_targets + 0.5 * S[:, bounds].mean(axis=1)
    allowed = np.ones(len(S), bool)
    allowed[seq] = False
    allowed[seq[mask_start - 1] + 1:(after if after is not None else targets[-1] + 1)] = False
    allowed &= to_shown < kappa
    kinds: dict[int, str] = {}
    if cfg.hardness == "hard":
        span = seq[-1] - seq[0]
        pad = max(int(round(span * cfg.neighbourhood)), len(seq))
        lo, hi = max(0, seq[0] - pad), min(len(S), seq[-1] + pad + 1)
        window = np.zeros(len(S), bool)
        window[lo:hi] = True
        cands = np.flatnonzero(allowed & window)
        if len(cands) < cfg.l:                  # a sparse neighbourhood: widen to the whole video
            cands = np.flatnonzero(allowed)
        cands = cands[np.argsort(-hardness[cands], kind="stable")]
        kind_of = lambda c: "neighbor" if window[c] else "neighbor_widened"
    else:
        cands = rng.permutation(np.flatnonzero(allowed))
        kind_of = lambda c: "random"
    chosen: list[int] = []
    for c in cands:
        if all(S[c, d] < kappa for d in chosen):
            chosen.append(int(c))
            kinds[int(c)] = kind_of(c)
            if len(chosen) == cfg.l:
                break
    if len(chosen) < cfg.l:
        return None
    chosen.sort()
    return chosen, {c: float(np.clip(to_targets[c], 0.0, 1.0)) for c in chosen}, kinds


class OverlapLedger:
    """Frames already used by the accepted puzzles of one video. A new puzzle's overlap is the number
    of its targets that repeat (similarity >= kappa, the same frame included) an accepted target or
    shown frame, plus its shown frames that repeat an accepted target, over m."""

    def __init__(self, S: np.ndarray, kappa: float, max_overlap: float):
        self.S, self.kappa, self.max_overlap = S, kappa, max_overlap
        self.targets: list[int] = []
        self.shown: list[int] = []

    def _repeats(self, idx: list[int], used: list[int]) -> int:
        if not idx or not used:
            return 0
        return int((self.S[np.ix_(idx, used)].max(axis=1) >= self.kappa).sum())

    def allows(self, targets: list[int], shown: list[int], m: int) -> bool:
        if self.max_overlap >= 1.0:
            return True
        n = (self._repeats(targets, self.targets + self.shown) + self._repeats(shown, self.targets))
        return n <= self.max_overlap * m + 1e-9

    def add(self, targets: list[int], shown: list[int]) -> None:
        self.targets += targets
        self.shown += shown


def _mask_starts(cfg: SynthConfig, rng: np.random.Generator) -> list[int]:
    hi = cfg.n - cfg.m if cfg.tail else cfg.n - cfg.m - 1
    return [int(x) for x in rng.permutation(np.arange(1, hi + 1))]


def plan_puzzles(E: np.ndarray, cfg: SynthConfig, kappa: float, seed: int) -> tuple[list[Layout], str]:
    """Up to K layouts from different start times; a reason explains an empty result."""
    rng = np.random.default_rng(seed)
    S = similarities(E)
    layouts: list[Layout] = []
    seen: set[tuple[int, ...]] = set()
    ledger = OverlapLedger(S, kappa, cfg.max_overlap)
    counts = {"no_seq": 0, "undecidable": 0, "no_distractors": 0, "overlap": 0}
    for start in rng.permutation(len(E)):
        seq = keyframe_walk(S, int(start), cfg.n, kappa)
        if seq is None:
            counts["no_seq"] += 1
            continue
        if tuple(seq) in seen:
            continue
        seen.add(tuple(seq))
        layout = _layout_for(S, seq, cfg, kappa, rng, ledger, counts)
        if layout is not None:
            layouts.append(layout)
            ledger.add(layout.seq[layout.mask_start:layout.mask_start + cfg.m],
                       layout.seq[:layout.mask_start] + layout.seq[layout.mask_start + cfg.m:])
            if len(layouts) == cfg.per_video:
                break
    return layouts, _empty_reason(layouts, counts, cfg, kappa)


def _layout_for(S, seq, cfg, kappa, rng, ledger: OverlapLedger, counts: dict) -> Layout | None:
    """The first mask position (in random order) that is decidable, within the overlap budget and
    has l guard-passing distractors."""
    why = "undecidable"
    for mask_start in _mask_starts(cfg, rng):
        if not targets_decidable(S, seq, mask_start, cfg.m, kappa):
            continue
        targets = seq[mask_start:mask_start + cfg.m]
        if not ledger.allows(targets, seq[:mask_start] + seq[mask_start + cfg.m:], cfg.m):
            why = "overlap"
            continue
        mined = mine_distractors(S, seq, mask_start, cfg, kappa, rng)
        if mined is None:
            why = "no_distractors" if why != "overlap" else why
            continue
        distractors, difficulty, kinds = mined
        order = [int(i) for i in rng.permutation(targets + distractors)]
        return Layout(seq, mask_start, distractors, difficulty, order, kinds)
    counts[why] += 1
    return None


def _empty_reason(layouts: list[Layout], counts: dict, cfg: SynthConfig, kappa: float) -> str:
    if layouts:
        return ""
    if counts["no_distractors"]:
        return f"too few frames pass the ambiguity guard for {cfg.l} distractors (kappa={kappa})"
    if counts["undecidable"]:
        return (f"every sequence has near-duplicate targets or a target like a shown frame (kappa={kappa}; "
                "flashing or repeating frames)")
    return f"no start time gives {cfg.n} distinct keyframes (kappa={kappa})"

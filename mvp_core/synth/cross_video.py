"""`--cross-video K`: K more distractors per puzzle from the other videos of the same run, matched by
embedding (kind "cross_video"). This needs every video's frames at once, so it runs in the driver
after the workers: each worker returns the embeddings of its puzzles' frames and up to
DONORS_PER_VIDEO evenly spaced frames as donors. The same ambiguity guard applies: a donor is taken
only if its similarity to every target, every shown frame and every distractor already in the pool
is below kappa. Hard (default): the donors most similar to the targets and the frames around the gap;
`--hardness random`: uniform among those that pass. The options are shuffled again and the puzzle id
includes the donor frames, so the result depends on which videos were in the run (documented in
docs/SYNTHESIS.md)."""
from __future__ import annotations

import numpy as np

from mvp_core.puzzle import LABELS, stable_id
from mvp_core.synth.config import SynthConfig
from mvp_core.synth.job import VideoResult
from mvp_core.video.frames import FrameStore


def add_cross_video(results: list[VideoResult], cfg: SynthConfig, data_dir: str) -> None:
    """Add `cfg.cross_video` cross-video distractors to every record of the ok results, in place.
    Results are visited in video-id order, so the outcome does not depend on completion order."""
    ok = sorted((r for r in results if r.ok and r.records), key=lambda r: r.video["id"])
    if cfg.cross_video <= 0 or len(ok) < 2:
        return
    store = FrameStore(data_dir)
    donors = [(r.video["id"], t, jpeg, e) for r in ok for (t, jpeg, e) in r.donors]
    D = np.stack([d[3] for d in donors]).astype(np.float32)
    for res in ok:
        others = np.array([d[0] != res.video["id"] for d in donors])
        for rec in res.records:
            chosen = _choose(rec, res.embeddings, D, others, cfg)
            if len(chosen) < cfg.cross_video:
                continue  # too few donors pass the guard: the puzzle keeps its own distractors only
            _extend(rec, [donors[i] for i in chosen], D, res.embeddings, store)


def _choose(rec: dict, emb: dict, D: np.ndarray, others: np.ndarray, cfg: SynthConfig) -> list[int]:
    kappa = float(rec["params"]["kappa"])
    s, m = rec["mask"]["start"], rec["mask"]["length"]
    shown = [f["uri"] for i, f in enumerate(rec["frames"]) if not s <= i < s + m]
    targets = [o["uri"] for o in rec["options"] if o["kind"] == "target"]
    pool = np.stack([emb[u] for u in {o["uri"] for o in rec["options"]} | set(shown)])
    to_targets = (D @ np.stack([emb[u] for u in targets]).T).max(axis=1)
    bounds = [rec["frames"][s - 1]["uri"]] + ([rec["frames"][s + m]["uri"]] if s + m < len(rec["frames"]) else [])
    hardness = 0.5 * to_targets + 0.5 * (D @ np.stack([emb[u] for u in bounds]).T).mean(axis=1)
    allowed = others & ((D @ pool.T).max(axis=1) < kappa)
    cands = np.flatnonzero(allowed)
    if cfg.hardness == "random":
        cands = np.random.default_rng(int(stable_id("cross", rec["id"])[:8], 16)).permutation(cands)
    else:
        cands = cands[np.argsort(-hardness[cands], kind="stable")]
    chosen: list[int] = []
    for c in cands:
        if all(float(D[c] @ D[d]) < kappa for d in chosen):
            chosen.append(int(c))
            if len(chosen) == cfg.cross_video:
                break
    return chosen


def _extend(rec: dict, picked: list, D: np.ndarray, emb: dict, store: FrameStore) -> None:
    targets = [o["uri"] for o in rec["options"] if o["kind"] == "target"]
    T = np.stack([emb[u] for u in targets])
    options = [dict(o) for o in rec["options"]]
    for vid, t, jpeg, e in picked:
        uri = store.put_bytes(jpeg)
        store.thumbnail(uri)
        emb[uri] = e
        options.append({"label": "", "uri": uri, "t": t, "source_video_id": vid, "kind": "cross_video",
                        "difficulty": round(float(np.clip((T @ e).max(), 0.0, 1.0)), 4)})
    new_id = stable_id(rec["id"], [o["uri"] for o in options[len(rec["options"]):]])
    order = np.random.default_rng(int(new_id[:8], 16)).permutation(len(options))
    options = [options[i] for i in order]
    for k, o in enumerate(options):
        o["label"] = LABELS[k]
    label_of = {o["uri"]: o["label"] for o in options if o["kind"] == "target"}
    s, m = rec["mask"]["start"], rec["mask"]["length"]
    rec["options"] = options
    rec["answer"] = [label_of[f["uri"]] for f in rec["frames"][s:s + m]]
    rec["id"] = new_id

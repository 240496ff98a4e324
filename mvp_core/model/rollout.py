"""Sample G answers per puzzle (each prompt prefilled once, mvp_core/model/decode.py `sample_each`) and
score each with the fine-grained reward.

Frames come from the frame store through `load_frame(uri)` (no video decoding here). Work is
resumable: pairs (puzzle id, sample index) in `done` are skipped, and a puzzle with some samples
stored only generates the missing ones. Each answer becomes one row (a dict) with the completion,
the chosen labels, every reward term and the group-normalised advantage."""
from __future__ import annotations

import hashlib
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from mvp_core.atomic import atomic_path
from mvp_core.errors import UserError
from mvp_core.train.loss import group_advantage_list
from mvp_core.model.prompt import PromptConfig, build_inputs
from mvp_core.model.sampler import DEFAULT_MIN_P, DEFAULT_REPETITION_PENALTY, DEFAULT_TOP_K, SamplerSettings
from mvp_core.puzzle import Puzzle
from mvp_core.reward import DEFAULT_WEIGHTS, score_completion

TERMS = ("format", "selection", "order", "exact", "total")


@dataclass
class GenConfig:
    """Sampling settings (TRL names where TRL has one).

    num_generations: G, answers per puzzle.
    max_new_tokens: completion length cap (TRL: max_completion_length).
    top_k / min_p / repetition_penalty: off by default (0, 0, 1.0), as in training
      (mvp_core.model.sampler): the same distribution the trainer's log-probs describe.
    do_sample: False for greedy decoding (evaluation); then G should be 1.
    seed: base seed; each puzzle's sampling is seeded from (seed, puzzle id), so a resumed or
      re-ordered run draws the same answers for the same puzzle when it is generated alone.
    """
    num_generations: int = 8
    max_new_tokens: int = 128
    temperature: float = 1.0
    top_p: float = 1.0
    top_k: int = DEFAULT_TOP_K
    min_p: float = DEFAULT_MIN_P
    repetition_penalty: float = DEFAULT_REPETITION_PENALTY
    do_sample: bool = True
    seed: int = 0

    def __post_init__(self):
        if self.num_generations < 1:
            raise UserError(f"num_generations must be >= 1, got {self.num_generations!r}")
        self.sampler()      # checks the sampling settings now, before a model is loaded

    def sampler(self) -> SamplerSettings:
        """The generate settings; a checkpoint's generation_config is never consulted."""
        return SamplerSettings(temperature=self.temperature, top_p=self.top_p, top_k=self.top_k or 0,
                               min_p=self.min_p or 0.0, repetition_penalty=self.repetition_penalty,
                               do_sample=self.do_sample, max_new_tokens=self.max_new_tokens)


@dataclass
class RolloutStats:
    """Wall time split: building inputs (frames + processor), generation, decoding + scoring."""
    prep_s: float = 0.0
    gen_s: float = 0.0
    score_s: float = 0.0
    answers: int = 0
    puzzles: int = 0
    completion_tokens: int = 0
    extra: dict = field(default_factory=dict)

    def as_dict(self) -> dict:
        total = self.prep_s + self.gen_s + self.score_s
        return {"prep_s": self.prep_s, "gen_s": self.gen_s, "score_s": self.score_s, "total_s": total,
                "answers": self.answers, "puzzles": self.puzzles, "completion_tokens": self.completion_tokens,
                "answers_per_s": self.answers / total if total else 0.0,
                "gen_share": self.gen_s / total if total else 0.0,
                "score_share": self.score_s / total if total else 0.0}


def frame_loader(data_dir):
    """`load_frame(uri)` over the project's frame store in `data_dir`."""
    from mvp_core.video.frames import FrameStore
    return FrameStore(data_dir).load


def _seed_for(seed: int, key: str) -> int:
    return int(hashlib.sha256(f"{seed}:{key}".encode()).hexdigest()[:8], 16)


def generate(model, processor, puzzles: list, load_frame, pcfg: PromptConfig, gcfg: GenConfig,
             n: int, stats: RolloutStats | None = None) -> list[list[tuple[str, int]]]:
    """n completions per puzzle: [[(text, n_tokens), ...] per puzzle], one batched generate call."""
    import torch
    stats = stats or RolloutStats()
    t0 = time.perf_counter()
    try:
        inputs = build_inputs(processor, puzzles, load_frame, pcfg).to(model.device)
    except (OSError, ValueError) as e:   # a missing / unreadable frame file, a uri outside the store
        ids = ", ".join(p["id"] if isinstance(p, dict) else p.id for p in puzzles)
        raise UserError(f"puzzle {ids}: cannot build the model inputs ({str(e).splitlines()[0]})") from None
    t1 = time.perf_counter()
    torch.manual_seed(_seed_for(gcfg.seed, "|".join(p["id"] if isinstance(p, dict) else p.id for p in puzzles)))
    from mvp_core.model.decode import sample_each
    with torch.inference_mode():
        new = sample_each(model, inputs, gcfg.sampler(), n)
    t2 = time.perf_counter()
    gen_cfg = model.generation_config
    eos = gen_cfg.eos_token_id if isinstance(gen_cfg.eos_token_id, list) else [gen_cfg.eos_token_id]
    pad = gen_cfg.pad_token_id
    texts = processor.batch_decode(new, skip_special_tokens=True)
    lengths = []
    for row in new.tolist():
        k = len(row)
        for i, tok in enumerate(row):
            if tok in eos or tok == pad:
                k = i + 1 if tok in eos else i
                break
        lengths.append(k)
    stats.prep_s += t1 - t0
    stats.gen_s += t2 - t1
    stats.completion_tokens += sum(lengths)
    pairs = list(zip(texts, lengths))
    return [pairs[i * n:(i + 1) * n] for i in range(len(puzzles))]


# ---- the one scored-completion schema -------------------------------------------------------------
# A row per sampled answer, the same in `mvp rollout` / `mvp eval` (rollouts.parquet, the database's
# rollouts) and in a training run's completions/step_N.parquet, which adds TRAINING_COLUMNS.
SCORED_COMPLETION = (
    ("puzzle_id", "string"), ("video_id", "string"), ("sample_index", "int32"), ("completion", "string"),
    ("chosen_labels", "list<string>"), ("chosen_kinds", "list<string>"), ("format", "float64"),
    ("selection", "float64"), ("order", "float64"), ("exact", "float64"), ("total", "float64"),
    ("advantage", "float64"), ("completion_tokens", "int32"),
)
TRAINING_COLUMNS = (("step", "int32"), ("rank", "int32"))
PARQUET_COLUMNS = [name for name, _ in SCORED_COMPLETION]


def arrow_schema(columns=SCORED_COMPLETION):
    """The pyarrow schema of `columns` ((name, type) pairs of SCORED_COMPLETION / TRAINING_COLUMNS)."""
    import pyarrow as pa
    types = {"string": pa.string(), "int32": pa.int32(), "float64": pa.float64(), "list<string>": pa.list_(pa.string())}
    return pa.schema([(name, types[kind]) for name, kind in columns])


def scored_row(record, sample_index: int, text: str, n_tokens: int, terms: dict, total: float,
               advantage: float = 0.0) -> dict:
    """One row of SCORED_COMPLETION. `record` is a Puzzle or its dict; `terms` holds the reward terms
    (format, selection, order, exact) and the chosen `labels`; `total` is the reward that counts."""
    pz = record if isinstance(record, Puzzle) else Puzzle.from_dict(record)
    kinds = {o.label: o.kind for o in pz.options}
    labels = list(terms["labels"])
    return {"puzzle_id": pz.id, "video_id": pz.video.id, "sample_index": int(sample_index), "completion": text,
            "chosen_labels": labels, "chosen_kinds": [kinds.get(x, "outside") for x in labels],
            "format": float(terms["format"]), "selection": float(terms["selection"]), "order": float(terms["order"]),
            "exact": float(terms["exact"]), "total": float(total), "advantage": float(advantage),
            "completion_tokens": int(n_tokens)}


def score_group(pz: Puzzle, completions: list[tuple[str, int]], sample_indices: list[int],
                weights: dict | None = None) -> list[dict]:
    """Rows for one puzzle's answers, with the advantage training would give them (the group's
    `mvp_core.train.loss.group_advantages`, scale_rewards="group")."""
    pool = [o.label for o in pz.options]
    rows = []
    for (text, n_tok), idx in zip(completions, sample_indices):
        t = score_completion(text, pz.answer, pool, weights or DEFAULT_WEIGHTS)
        terms = {"format": t.format, "selection": t.selection, "order": t.order, "exact": t.exact, "labels": t.labels}
        rows.append(scored_row(pz, idx, text, n_tok, terms, t.total))
    for row, a in zip(rows, group_advantage_list([row["total"] for row in rows])):
        row["advantage"] = a
    return rows


def run_rollouts(model, processor, records: list, load_frame, pcfg: PromptConfig | None = None,
                 gcfg: GenConfig | None = None, done: set | None = None, batch_puzzles: int = 1,
                 on_batch=None, progress: bool = False, stats: RolloutStats | None = None,
                 weights: dict | None = None) -> list[dict]:
    """G answers per puzzle, scored. `done` holds (puzzle_id, sample_index) pairs to skip;
    `on_batch(rows)` is called after every generate call (store them there to survive a crash)."""
    from tqdm import tqdm
    pcfg, gcfg = pcfg or PromptConfig(), gcfg or GenConfig()
    done = done or set()
    stats = stats if stats is not None else RolloutStats()
    G = gcfg.num_generations
    # (puzzle, missing sample indices); puzzles with the same number missing batch together.
    todo = []
    for rec in records:
        pz = rec if isinstance(rec, Puzzle) else Puzzle.from_dict(rec)
        missing = [i for i in range(G) if (pz.id, i) not in done]
        if missing:
            todo.append((pz, missing))
    rows: list[dict] = []
    bar = tqdm(total=len(todo), desc="rollout", unit="puzzle", disable=not progress)
    i = 0
    while i < len(todo):
        n = len(todo[i][1])
        batch = [todo[i]]
        while len(batch) < max(1, batch_puzzles) and i + len(batch) < len(todo) \
                and len(todo[i + len(batch)][1]) == n:
            batch.append(todo[i + len(batch)])
        outs = generate(model, processor, [pz for pz, _ in batch], load_frame, pcfg, gcfg, n, stats)
        t0 = time.perf_counter()
        new = []
        for (pz, missing), comps in zip(batch, outs):
            new += score_group(pz, comps, missing, weights)
        stats.score_s += time.perf_counter() - t0
        stats.answers += len(new)
        stats.puzzles += len(batch)
        if on_batch:
            on_batch(new)
        rows += new
        i += len(batch)
        bar.update(len(batch))
        bar.set_postfix(reward=f"{np.mean([r['total'] for r in rows]):.3f}")
    bar.close()
    return rows


def summarize(rows: list[dict]) -> dict:
    """Means of every reward term over the answers, plus counts."""
    out = {"answers": len(rows), "puzzles": len({r["puzzle_id"] for r in rows})}
    for k in TERMS:
        out[k] = float(np.mean([r[k] for r in rows])) if rows else 0.0
    if rows:
        out["completion_tokens"] = float(np.mean([r.get("completion_tokens", 0) for r in rows]))
    return out


def write_parquet(path, rows: list[dict]) -> list[dict]:
    """Merge `rows` into the Parquet file at `path` (rows already there, by (puzzle, sample), are
    kept), written atomically; returns all rows in the file."""
    import pyarrow as pa
    import pyarrow.parquet as pq
    path = Path(path)
    old = pq.read_table(path).to_pylist() if path.exists() else []
    seen = {(r["puzzle_id"], r["sample_index"]) for r in old}
    merged = old + [r for r in rows if (r["puzzle_id"], r["sample_index"]) not in seen]
    merged.sort(key=lambda r: (r["puzzle_id"], r["sample_index"]))
    table = pa.Table.from_pylist([{k: r.get(k) for k in PARQUET_COLUMNS} for r in merged], schema=arrow_schema())
    path.parent.mkdir(parents=True, exist_ok=True)
    with atomic_path(path) as tmp:
        pq.write_table(table, tmp)
    return merged

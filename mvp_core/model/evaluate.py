"""Evaluate a VideoLLM on puzzles: exact match, mean reward and each reward term, overall, by
distractor kind and by hardness, with the shortcut audit's solvers as baselines on the same puzzles.

The model answers once per puzzle (greedy by default). A puzzle's hardness is the mean difficulty
of its distractors (similarity to the closest target, in [0, 1]) bucketed by `HARDNESS_EDGES`."""
from __future__ import annotations

from collections import Counter, defaultdict
from dataclasses import replace

import numpy as np

from mvp_core.model.prompt import PromptConfig
from mvp_core.model.rollout import GenConfig, RolloutStats, run_rollouts
from mvp_core.puzzle import Puzzle
from mvp_core.reward import score_prediction
from mvp_core.synth.audit import SOLVERS, FeatureCache, chance_exact, distractor_kind

TERMS = ("total", "exact", "format", "selection", "order")
# Mean distractor difficulty: [0, 0.5) easy, [0.5, 0.8) medium, [0.8, 1] hard.
HARDNESS_EDGES = ((0.5, "easy"), (0.8, "medium"), (float("inf"), "hard"))


def hardness(pz: Puzzle) -> str:
    d = [o.difficulty for o in pz.options if o.kind != "target"]
    x = float(np.mean(d)) if d else 0.0
    return next(name for edge, name in HARDNESS_EDGES if x < edge)


def solver_answers(puzzles: list[Puzzle], load_frame) -> dict[str, list[list[str]]]:
    """Each audit solver's labels per puzzle."""
    feats = FeatureCache(load_frame)
    return {name: [list(fn(pz, feats)) for pz in puzzles] for name, fn in SOLVERS.items()}


def _terms(t) -> dict:
    return {"total": t.total, "exact": t.exact, "format": t.format, "selection": t.selection, "order": t.order}


def evaluate(model, processor, records: list, load_frame, pcfg: PromptConfig | None = None,
             gcfg: GenConfig | None = None, progress: bool = False, baselines: bool = True,
             batch_puzzles: int = 8) -> dict:
    """The report: {"n_puzzles", "systems", "groups": {group: {"n", "chance_exact", system: {terms}}},
    "picked_kinds", "puzzles": [...], "timing"}. Groups: "all", "kind:<k>", "hardness:<h>"."""
    puzzles = [r if isinstance(r, Puzzle) else Puzzle.from_dict(r) for r in records]
    gcfg = replace(gcfg or GenConfig(do_sample=False), num_generations=1)
    stats = RolloutStats()
    # one answer per puzzle: batch puzzles per generate call (left-padded; greedy answers)
    rows = run_rollouts(model, processor, puzzles, load_frame, pcfg, gcfg, progress=progress, stats=stats,
                        batch_puzzles=batch_puzzles)
    by_id = {r["puzzle_id"]: r for r in rows}
    per_system: dict[str, list[dict]] = {"model": [{k: by_id[p.id][k] for k in TERMS} for p in puzzles]}
    solved = solver_answers(puzzles, load_frame) if baselines else {}
    for name, answers in solved.items():
        per_system[name] = [_terms(score_prediction(a, p.answer, [o.label for o in p.options]))
                            for a, p in zip(answers, puzzles)]
    groups: dict[str, list[int]] = defaultdict(list)
    for i, p in enumerate(puzzles):
        for g in ("all", f"kind:{distractor_kind(p)}", f"hardness:{hardness(p)}"):
            groups[g].append(i)
    order = sorted(groups, key=lambda g: (g != "all", g.split(":")[0] != "kind", g))
    report_groups = {}
    for g in order:
        idx = groups[g]
        entry = {"n": len(idx), "chance_exact": float(np.mean([chance_exact(puzzles[i]) for i in idx]))}
        for name, vals in per_system.items():
            entry[name] = {k: float(np.mean([vals[i][k] for i in idx])) for k in TERMS}
        report_groups[g] = entry
    # Which options the model picks: targets, or which kind of distractor it falls for.
    picked = Counter(k for r in rows for k in r["chosen_kinds"])
    return {
        "n_puzzles": len(puzzles),
        "systems": list(per_system),
        "generation": {"do_sample": gcfg.do_sample, "max_new_tokens": gcfg.max_new_tokens,
                       "temperature": gcfg.temperature if gcfg.do_sample else None},
        "groups": report_groups,
        "picked_kinds": dict(sorted(picked.items())),
        "puzzles": [{"id": p.id, "answer": p.answer, "kind": distractor_kind(p), "hardness": hardness(p),
                     "video_id": p.video.id, "completion": by_id[p.id]["completion"], "model_labels": by_id[p.id]["chosen_labels"],
                     **{f"model_{k}": by_id[p.id][k] for k in TERMS},
                     **{f"{name}_labels": ans[i] for name, ans in solved.items()}}
                    for i, p in enumerate(puzzles)],
        "timing": stats.as_dict(),
    }


def markdown_report(report: dict) -> str:
    """Two tables: exact match / mean reward per group and system, then the model's reward terms."""
    systems = report["systems"]
    lines = [f"## Evaluation on {report['n_puzzles']} puzzles", "",
             "Exact match / mean reward per group (baselines: the shortcut audit's solvers).", "",
             "| group | n | chance exact | " + " | ".join(systems) + " |",
             "|---|---:|---:|" + "---:|" * len(systems)]
    for g, e in report["groups"].items():
        cells = [f"{e[s]['exact']:.3f} / {e[s]['total']:.3f}" for s in systems]
        lines.append(f"| {g} | {e['n']} | {e['chance_exact']:.4f} | " + " | ".join(cells) + " |")
    lines += ["", "Model reward terms per group.", "",
              "| group | n | total | exact | format | selection | order |", "|---|---:|---:|---:|---:|---:|---:|"]
    for g, e in report["groups"].items():
        m = e["model"]
        lines.append(f"| {g} | {e['n']} | " + " | ".join(f"{m[k]:.3f}" for k in TERMS) + " |")
    if report.get("picked_kinds"):
        lines += ["", "Options the model picked, by kind: " +
                  ", ".join(f"{k} {v}" for k, v in report["picked_kinds"].items())]
    return "\n".join(lines) + "\n"

"""The project's reward (mvp_core/export/reward_fn.py over mvp_core/reward.py; no copy) in the engines'
forms, logging each answer's puzzle id beside its score, so `mvp import-run` puts every logged
generation on its puzzle even where two puzzles share a prompt text and answer (docs/scale.md).

- verl: `reward.custom_reward_function.path=<this file> reward.custom_reward_function.name=compute_score`:
  verl takes "score" as the reward and writes the other keys into its validation dumps.
- TRL: `GRPOTrainer(reward_funcs=[mvp_reward], args=GRPOConfig(log_completions=True))` on the trl
  export: the reward of each completion against the row's answer and options (labels), and the
  row's puzzle_id logged into TRL's completions table (`log_extra`). Video-R1's trainer calls its
  reward functions the same way with every column of the video-r1 export (answer and options too).

Loadable by path outside the project's environment, as reward_fn.py is."""
from __future__ import annotations

import sys
from pathlib import Path

try:
    from mvp_core.export.reward_fn import compute_score as project_score
except ImportError:     # loaded by path from an engine's environment (reward_fn.py does the same)
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
    from mvp_core.export.reward_fn import compute_score as project_score
from mvp_core.reward import score_completion
from mvp_core.runs_import.readers import completion_text


def compute_score(data_source, solution_str, ground_truth, extra_info=None, **kwargs) -> dict:
    """verl's dict form: {"score": the project's reward, "puzzle_id": the export's extra_info id}."""
    info = extra_info if isinstance(extra_info, dict) else {}
    return {"score": project_score(data_source, solution_str, ground_truth, extra_info),
            "puzzle_id": str(info.get("puzzle_id") or "")}


def mvp_reward(prompts, completions, answer, options, puzzle_id=None, log_extra=None, **kwargs) -> list[float]:
    """TRL's reward-function signature over the trl export's columns."""
    if log_extra is not None and puzzle_id is not None:
        log_extra("puzzle_id", [str(p) for p in puzzle_id])
    return [score_completion(completion_text(c) or "", list(a),
                             [o["label"] if isinstance(o, dict) else o for o in opts]).total
            for c, a, opts in zip(completions, answer, options)]

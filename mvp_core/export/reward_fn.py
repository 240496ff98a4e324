"""The project's reward in verl's and EasyR1's reward-function forms, loadable by path (docs/scale.md):

- verl (one answer per call): `reward.custom_reward_function.path=<this file>
  reward.custom_reward_function.name=compute_score`.
- EasyR1 (a batch per call): `worker.reward.reward_function=<this file>:compute_score_batch` with
  `data.answer_key=ground_truth` (the easyr1 export's `{answer, pool}` column; its `answer` column is
  the plain answer text that EasyR1's stock rewards grade). EasyR1 reads REWARD_TYPE and REWARD_NAME.

It scores with mvp_core/reward.py (the one reward; no copy). Loaded by path outside the project's
environment, it puts the folder that holds `mvp_core` on sys.path first; mvp_core.reward is pure Python."""
from __future__ import annotations

import json
import sys
from pathlib import Path

try:
    from mvp_core.reward import score_completion
except ImportError:     # loaded by path from an engine's environment
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
    from mvp_core.reward import score_completion

REWARD_NAME = "mvp"
REWARD_TYPE = "batch"   # EasyR1: compute_score_batch takes the whole batch


def truth(ground_truth) -> tuple[list[str], list[str]]:
    """(answer labels, label pool) from the JSON of mvp_core/export/formats.py `ground_truth`. The pool
    is needed (a label outside it scores 0), so a bare answer text is refused in one line."""
    try:
        gt = json.loads(ground_truth) if isinstance(ground_truth, str) else ground_truth
        return list(gt["answer"]), list(gt["pool"])
    except (ValueError, TypeError, KeyError) as e:
        raise ValueError(f"ground truth {str(ground_truth)[:80]!r} is not the export's JSON {{answer, pool}} "
                         f"({type(e).__name__}); with EasyR1 set data.answer_key=ground_truth") from None


def compute_score(data_source, solution_str, ground_truth, extra_info=None, **kwargs) -> float:
    """verl's form: the reward of one answer."""
    return score_completion(str(solution_str), *truth(ground_truth)).total


def compute_score_batch(reward_inputs: list[dict], **kwargs) -> list[dict[str, float]]:
    """EasyR1's batch form: each input {response, response_length, ground_truth} gives {"overall": the
    reward, and each of its terms}, which EasyR1 logs as metrics."""
    out = []
    for x in reward_inputs:
        t = score_completion(str(x["response"]), *truth(x["ground_truth"]))
        out.append({"overall": t.total, "format": t.format, "selection": t.selection, "order": t.order,
                    "accuracy": t.exact})
    return out

"""The project's reward in verl's and EasyR1's reward-function form, loadable by path
(verl: `custom_reward_function.path=<this file> custom_reward_function.name=compute_score`).

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


def compute_score(data_source, solution_str, ground_truth, extra_info=None, **kwargs) -> float:
    """ground_truth: the JSON string of mvp_core/export/formats.py `ground_truth` ({answer, pool})."""
    gt = json.loads(ground_truth) if isinstance(ground_truth, str) else ground_truth
    return score_completion(str(solution_str), list(gt["answer"]), list(gt["pool"])).total

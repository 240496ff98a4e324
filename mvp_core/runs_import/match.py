"""Place each logged generation on its puzzle of the set it was exported from, and score it with the
project's reward (mvp_core/reward.py; the engine's own score is only compared).

A generation names its puzzle when the engine logged the id the studio's exports carry (verl
extra_info.puzzle_id / TRL's puzzle_id column, logged by mvp_core/export/logged_reward.py).
Otherwise it is placed by what it shows: the puzzle whose exported prompt text (mvp_core/export/
formats.py `prompt_and_images`, image slots dropped) is inside the logged prompt, and whose ground
truth equals the logged one when there is one. Two puzzles can share both (same frame count, gap and
answer), so such a generation is refused rather than guessed: the error says to log the id."""
from __future__ import annotations

import json
import re
from dataclasses import dataclass

from mvp_core.errors import UserError
from mvp_core.export.formats import IMAGE_SLOT, ground_truth, prompt_and_images
from mvp_core.reward import parse_labels, score_completion
from mvp_core.runs_import.readers import Generation

LOG_THE_ID = ("log the puzzle id with the reward: reward.custom_reward_function.path=mvp_core/export/logged_reward.py "
              "(verl) or reward_funcs=[logged_reward.mvp_reward] (TRL); docs/scale.md")


@dataclass
class Placed:
    step: int
    puzzle_id: str
    split: str | None
    row: dict              # the rollout row: completion, chosen labels, each reward term, advantage
    engine_score: float | None


_PLACEHOLDER = re.compile(r"<\|[a-z_]+\|>|" + re.escape(IMAGE_SLOT))


def _squash(text: str) -> str:
    # Decoding drops the image tokens (or keeps their placeholders) and may change the whitespace
    # around them: compare without either.
    return "".join(_PLACEHOLDER.sub("", text).split())


def _gt(value) -> object:
    """A logged ground truth in one comparable form: the export's {answer, pool}, or the answer
    labels alone where the engine logged the plain answer text (EasyR1's default `answer` column)."""
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except ValueError:
            return parse_labels(value) or value
    if isinstance(value, dict) and "answer" in value and "pool" in value:
        return {"answer": list(value["answer"]), "pool": list(value["pool"])}
    return value


def _truths(rec: dict) -> list[str]:
    """The keys a logged ground truth of `rec` can have: with and without the pool."""
    return [json.dumps(_gt(ground_truth(rec)), sort_keys=True), json.dumps(list(rec["answer"]))]


class Matcher:
    def __init__(self, records: list[dict], set_name: str):
        self.set_name = set_name
        self.by_id = {r["id"]: r for r in records}
        self.keys = [(r["id"], _squash(prompt_and_images(r)[0]), _gt(ground_truth(r)))
                     for r in records]
        self.by_truth: dict[str, list[tuple[str, str, object]]] = {}     # a logged ground truth narrows the search
        for key in self.keys:
            for truth in _truths(self.by_id[key[0]]):
                self.by_truth.setdefault(truth, []).append(key)

    def puzzle_of(self, g: Generation) -> dict:
        if g.puzzle_id is not None:
            rec = self.by_id.get(g.puzzle_id)
            if rec is None:
                raise UserError(f"{g.source}: puzzle {g.puzzle_id!r} is not in set {self.set_name!r} "
                                f"(import the run with the set it was exported from)")
            if g.ground_truth is not None and json.dumps(_gt(g.ground_truth), sort_keys=True) not in _truths(rec):
                raise UserError(f"{g.source}: its ground truth is not puzzle {g.puzzle_id!r}'s in set "
                                f"{self.set_name!r} (exported from another set?)")
            return rec
        if not g.prompt:
            raise UserError(f"{g.source}: the generation names no puzzle and logs no prompt; {LOG_THE_ID}")
        prompt = _squash(g.prompt)
        keys = self.keys if g.ground_truth is None else self.by_truth.get(
            json.dumps(_gt(g.ground_truth), sort_keys=True), [])
        hits = [pid for pid, text, _ in keys if text in prompt]
        if not hits:
            raise UserError(f"{g.source}: matches no puzzle of set {self.set_name!r} (was it exported from "
                            f"this set, in frame mode?)")
        if len(hits) > 1:
            raise UserError(f"{g.source}: its prompt and answer fit {len(hits)} puzzles of set "
                            f"{self.set_name!r} ({', '.join(hits[:3])}{', ...' if len(hits) > 3 else ''}): "
                            f"the line logs the prompt's text but not its images, and these puzzles share "
                            f"that text and the ground truth, so only a logged puzzle id tells them apart; "
                            f"{LOG_THE_ID}")
        return self.by_id[hits[0]]


def place(generations: list[Generation], records: list[dict], set_name: str) -> list[Placed]:
    """Every generation on its puzzle, scored; sample indices count a puzzle's answers per step in
    the order logged. One bad generation refuses them all (nothing is stored half)."""
    m = Matcher(records, set_name)
    seen: dict[tuple[int, str], int] = {}
    out = []
    for g in generations:
        rec = m.puzzle_of(g)
        t = score_completion(g.completion, list(rec["answer"]), [o["label"] for o in rec["options"]])
        k = (g.step, rec["id"])
        seen[k] = seen.get(k, -1) + 1
        out.append(Placed(g.step, rec["id"], rec.get("split"),
                          {"puzzle_id": rec["id"], "sample_index": seen[k], "completion": g.completion,
                           "chosen_labels": list(t.labels), "format": t.format, "selection": t.selection,
                           "order": t.order, "exact": t.exact, "total": t.total, "advantage": g.advantage},
                          g.score))
    return out


def score_mismatches(placed: list[Placed], tol: float = 1e-6) -> int:
    """How many generations the engine scored differently from the project's reward."""
    return sum(1 for p in placed if p.engine_score is not None and abs(p.engine_score - p.row["total"]) > tol)

"""The Train page's split choice (learning is shown on videos a run never trained on): which splits of the curated set
a run trains on (default: train only) and which one it is evaluated on while it trains (the trainer's
held-out eval: eval_puzzles / eval_split). Evaluating on a split the run trains on scores memory,
not learning: the page marks it and refuses to launch it unless the user ticks the box that asks for
it explicitly."""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import gradio as gr

from app.web.common import esc
from mvp_core.errors import UserError

TRAIN_DEFAULT = ("train",)      # db.sets.curated.TRAIN_SPLITS, what `mvp train --set` reads too


def default_eval(splits: list[str]) -> str:
    """The split a run is evaluated on by default: val, else test, else none."""
    return next((x for x in ("val", "test") if x in splits), "")


def check(splits_of_set: list[str], train: list[str], evaluate: str, allow: bool) -> None:
    """A one-line UserError for a choice that may not launch."""
    if not splits_of_set:
        return                       # a set frozen without splits: all of it, nothing held out
    if not train:
        raise UserError("choose at least one split to train on (normally: train)")
    if evaluate and evaluate in train and not allow:
        raise UserError(f"the run would be evaluated on split {evaluate}, which it trains on: that scores "
                        f"memory, not learning (choose another split, or tick \"evaluate on a split it "
                        f"trains on\")")


def note_html(counts: dict[str, int], train: list[str], evaluate: str) -> str:
    """What the run will read: its training splits with their sizes, the eval split, what stays out;
    marked (data-overlap="1") when the eval split is one it trains on."""
    if not counts:
        return ('<div id="train-split-note" class="mvp-cap" data-overlap="0" data-splits="">This set was '
                'frozen without splits: the run trains on all of it and nothing is held out.</div>')
    overlap = bool(evaluate) and evaluate in train
    fmt = lambda xs: ", ".join(f"{x} ({counts.get(x, 0)})" for x in xs) or "nothing"
    held = [x for x in counts if x not in train and x != evaluate]
    ev = (f'<b class="mvp-rej">evaluates on {esc(evaluate)}, a split it trains on: the score measures memory, '
          f'not learning</b>' if overlap else f"evaluates on {esc(fmt([evaluate]) if evaluate else 'no split')}")
    return (f'<div id="train-split-note" class="mvp-cap" data-overlap="{int(overlap)}" '
            f'data-splits="{esc(",".join(train))}" data-eval="{esc(evaluate)}">Trains on {esc(fmt(train))} · '
            f'{ev} · untouched: {esc(fmt(held))}</div>')


def eval_overrides(Session, data_dir: Path, set_name: str, evaluate: str) -> list[str]:
    """Config overrides that make the trainer evaluate on `evaluate` of the set: the whole set
    written once per content hash under DATA/train/heldout/, read with eval_split."""
    if not evaluate or not set_name:
        return []
    from db.sets.curated import SPLITS, get_set, snapshot_set
    data_dir = Path(data_dir)
    with Session() as s:
        digest = get_set(s, set_name).content_hash or "nohash"
        safe = "".join(c if c.isalnum() or c in "-_" else "-" for c in set_name)[:40]
        path = data_dir / "train" / "heldout" / f"{safe}-{digest[:12]}.jsonl"
        if not path.is_file():
            snapshot_set(s, set_name, path, SPLITS)
    return [f"eval_puzzles={path}", f"eval_data_dir={data_dir}", f"eval_split={evaluate}"]


def split_counts(ctx, set_name: str | None) -> dict[str, int]:
    from db.runs.rollout_views import split_counts as counts
    if not set_name:
        return {}
    with ctx.Session() as s:
        try:
            return counts(s, set_name)
        except UserError:          # deleted since the page listed it
            return {}


@dataclass
class SplitControls:
    train: gr.CheckboxGroup
    evaluate: gr.Dropdown
    allow: gr.Checkbox
    note: gr.HTML

    @property
    def inputs(self) -> list:
        return [self.train, self.evaluate, self.allow]


def build() -> SplitControls:
    with gr.Row():
        train = gr.CheckboxGroup(label="Train on splits", choices=list(TRAIN_DEFAULT), value=list(TRAIN_DEFAULT),
                                 elem_id="train-splits", scale=2)
        evaluate = gr.Dropdown(label="Evaluate during training on", choices=[("no split", "")], value="",
                               elem_id="train-eval-split", scale=2)
        allow = gr.Checkbox(label="evaluate on a split it trains on (scores memory, not learning)", value=False,
                            elem_id="train-eval-overlap", scale=2)
    note = gr.HTML(elem_id="train-split-note-box")
    return SplitControls(train, evaluate, allow, note)


def for_set(counts: dict[str, int], train: list[str] | None = None, evaluate: str | None = None,
            allow: bool = False) -> list:
    """[train splits, eval split, allow, note] for a set (defaults where not given)."""
    names = list(counts)
    train = [x for x in (train if train is not None else TRAIN_DEFAULT) if x in names]
    evaluate = evaluate if evaluate is not None and (evaluate in names or evaluate == "") else default_eval(names)
    return [gr.update(choices=names, value=train), gr.update(choices=[("no split", "")] + [(x, x) for x in names],
                                                             value=evaluate),
            gr.update(value=bool(allow)), note_html(counts, train, evaluate)]

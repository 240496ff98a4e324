"""The one registry of export formats (CLI choices, the Data page and docs/store.md read it) and the
pure row builders behind each consumer format. db/sets/export.py reads the set and writes the files.

Every model input built here shows only the context frames and the options, never a masked (target)
frame: the prompt is the project's own (mvp_core/model/prompt.py, frame mode) with each image part
replaced by an `<image>` slot, and the images listed in slot order. Image paths are relative to the
export folder (`./`-relative where the consumer resolves paths against its working directory)."""
from __future__ import annotations

import hashlib
import json

from mvp_core.model.prompt import render_messages
from mvp_core.reward import render_answer

DATA_SOURCE = "mvp"       # verl / EasyR1 key their reward on it; mvp_core/export/reward_fn.py answers it
IMAGE_SLOT = "<image>"
# The studio's split names -> the names `datasets` gives splits (its "validation", not "val"); every
# export format writes these, and an import takes either.
SPLIT_NAMES = {"train": "train", "val": "validation", "test": "test"}

# name -> one line on what it is (the CLI help, the Data page and docs/store.md read these).
FORMATS: dict[str, str] = {
    "jsonl": "the set's canonical records (puzzles.jsonl, hash = set hash) + set.json + frames; `mvp import` takes it back",
    "hf": "Hugging Face datasets folder: data/<split>-*.parquet with embedded images, option labels as text",
    "verl": "verl RLHFDataset parquet per split: data_source, chat prompt with <image> slots, images, reward_model, extra_info",
    "easyr1": "EasyR1 RLHFDataset parquet per split (data/<split>.parquet): problem (<image> slots), answer (text), ground_truth, images",
    "trl": "TRL conversational prompt/completion parquet per split with an ordered images list; options as labels",
    "llamafactory": "LLaMA-Factory sharegpt JSON per split (messages + images) and dataset_info.json",
    "video-r1": "Video-R1 JSON per split (problem_id, problem, solution, path, ...): one storyboard image per puzzle (context, gap masked, labelled options)",
}


def split_name(rec: dict) -> str:
    """The record's split as exports name it (a record of a set frozen before splits: "train")."""
    s = rec.get("split") or "train"
    return SPLIT_NAMES.get(s, s)


def set_split(name: str) -> str:
    """The set's own name for a split an export names ("validation" -> "val"); the set's names pass."""
    return {v: k for k, v in SPLIT_NAMES.items()}.get(name, name)


def problem_text(rec: dict, shown: str = "These are", where: str = "") -> str:
    """The question in words for formats that show the frames apart from the text; labels as in the
    record. `shown` opens it ("These are" N frames ...), `where` says where the gap and options are."""
    m, n, s = rec["mask"]["length"], len(rec["frames"]), rec["mask"]["start"]
    opts = ", ".join(o["label"] for o in rec["options"])
    return (f"{shown} {n} frames of a video in temporal order; frames {s + 1} to {s + m} are masked{where}. From the "
            f"options {opts}, choose the {m} frames that fill the gap and give their labels in temporal order "
            f"as <answer>X, Y, ...</answer>.")


def solution(rec: dict) -> str:
    """The exact answer in the project's answer format (mvp_core/model/prompt.py instruction), so the
    project's reward (mvp_core/reward.py) gives it full marks."""
    return render_answer(rec["answer"], process(rec))


def process(rec: dict) -> str:
    """A short reasoning text for SFT formats that ask for one (Video-R1's `process`)."""
    m = rec["mask"]["length"]
    return (f"The gap holds {m} frame{'s' if m > 1 else ''}; the options that continue the motion from the "
            f"frames before it to the frames after it, in order, are {', '.join(rec['answer'])}.")


def prompt_and_images(rec: dict) -> tuple[str, list[str]]:
    """(the user text with one `<image>` slot per context frame and per option, the image uris in
    slot order). Masked frames appear only as the [MASKED] text slot."""
    (msg,) = [m for m in render_messages(rec) if m["role"] == "user"]
    text, images = [], []
    for part in msg["content"]:
        if part["type"] == "text":
            text.append(part["text"])
        elif part["type"] == "image":
            text.append(IMAGE_SLOT)
            images.append(part["image"])
        else:       # frame mode only: render_messages gives no video part here
            raise ValueError(f"unexpected prompt part {part['type']!r}")
    return "".join(text), images


def answer_text(rec: dict) -> str:
    """The answer as the text inside the solution's <answer> tag ("C, A"): what stock exact-match
    rewards compare with."""
    return ", ".join(rec["answer"])


def ground_truth(rec: dict) -> str:
    """The reward's inputs as one JSON string: the answer labels and the label pool."""
    return json.dumps({"answer": list(rec["answer"]), "pool": [o["label"] for o in rec["options"]]})


def masked_uris(rec: dict) -> set[str]:
    s, m = rec["mask"]["start"], rec["mask"]["length"]
    return {f["uri"] for f in rec["frames"][s:s + m]}


def _check(rec: dict, images: list[str]) -> None:
    # Target frames are also options (by uri); a masked frame's own uri must never be a context image.
    s, m = rec["mask"]["start"], rec["mask"]["length"]
    ctx = [f["uri"] for i, f in enumerate(rec["frames"]) if not s <= i < s + m]
    if images[:len(ctx)] != ctx:
        raise ValueError(f"puzzle {rec['id']}: prompt images are not the context frames")


def verl_row(rec: dict, index: int, set_hash: str, path) -> dict:
    """`path(uri)` gives the image path stored in the row."""
    text, images = prompt_and_images(rec)
    _check(rec, images)
    split = split_name(rec)
    return {"data_source": DATA_SOURCE, "prompt": [{"role": "user", "content": text}],
            "images": [{"image": path(u)} for u in images], "ability": "video-reasoning",
            "reward_model": {"style": "rule", "ground_truth": ground_truth(rec)},
            "extra_info": {"puzzle_id": rec["id"], "split": split, "set_hash": set_hash, "index": index}}


def easyr1_row(rec: dict, index: int, set_hash: str, path) -> dict:
    """EasyR1's defaults: prompt_key=problem, answer_key=answer, image_key=images. `answer` is the
    plain answer text its stock rewards grade; `ground_truth` the project's reward's JSON (answer and
    label pool: data.answer_key=ground_truth). Neither is in the prompt."""
    text, images = prompt_and_images(rec)
    _check(rec, images)
    return {"problem": text, "answer": answer_text(rec), "ground_truth": ground_truth(rec),
            "images": [path(u) for u in images],
            "data_source": DATA_SOURCE, "puzzle_id": rec["id"], "split": split_name(rec),
            "set_hash": set_hash, "index": index}


def trl_row(rec: dict, index: int, set_hash: str, path) -> dict:
    """TRL conversational prompt/completion; `answer` and `options` (labels) are the reward's columns
    (mvp_core.reward.score_completion)."""
    text, images = prompt_and_images(rec)
    _check(rec, images)
    content = []
    for i, piece in enumerate(text.split(IMAGE_SLOT)):
        if i:
            content.append({"type": "image", "text": None})
        if piece:
            content.append({"type": "text", "text": piece})
    return {"prompt": [{"role": "user", "content": content}],
            "completion": [{"role": "assistant", "content": solution(rec)}],
            "images": [path(u) for u in images], "answer": list(rec["answer"]),
            "options": [o["label"] for o in rec["options"]], "puzzle_id": rec["id"],
            "split": split_name(rec), "set_hash": set_hash}


def llamafactory_row(rec: dict, index: int, set_hash: str, path) -> dict:
    text, images = prompt_and_images(rec)
    _check(rec, images)
    return {"messages": [{"role": "user", "content": text}, {"role": "assistant", "content": solution(rec)}],
            "images": [path(u) for u in images], "puzzle_id": rec["id"], "split": split_name(rec)}


def llamafactory_info(split_files: dict[str, str]) -> dict:
    """dataset_info.json entries (LLaMA-Factory data/README.md, sharegpt with openai-style messages)."""
    return {f"mvp_{split}": {"file_name": f, "formatting": "sharegpt",
                             "columns": {"messages": "messages", "images": "images"},
                             "tags": {"role_tag": "role", "content_tag": "content",
                                      "user_tag": "user", "assistant_tag": "assistant"}}
            for split, f in split_files.items()}


def storyboard_uri(rec: dict) -> str:
    """Where a puzzle's storyboard (mvp_core/export/storyboard.py) lies in a video-r1 export."""
    return f"storyboards/{hashlib.sha256(rec['id'].encode()).hexdigest()[:32]}.jpg"


def video_r1_row(rec: dict, index: int, set_hash: str, path) -> dict:
    """Video-R1's fields in its one-visual image form: `path` one `./` path, the puzzle's storyboard
    (no clip of the source video: that would show the masked frames). "free-form": its prompt asks
    for a text answer, which the problem says is the labels in order. `answer` and `options` (labels)
    are the columns of the project's TRL-form reward (logged_reward.mvp_reward), which Video-R1's
    trainer passes every column."""
    return {"problem_id": rec["id"], "split": split_name(rec),
            "problem": problem_text(rec, "The image is a storyboard. Its top row shows the",
                                    " (the grey tiles marked ?) and its bottom row shows the options, each under its label"),
            "data_type": "image", "problem_type": "free-form",
            "options": [o["label"] for o in rec["options"]], "answer": list(rec["answer"]),
            "process": f"<think>{process(rec)}</think>", "solution": f"<answer>{answer_text(rec)}</answer>",
            "path": path(storyboard_uri(rec)), "set_hash": set_hash}


BUILDERS = {"verl": verl_row, "easyr1": easyr1_row, "trl": trl_row, "llamafactory": llamafactory_row,
            "video-r1": video_r1_row}

"""Steps and checks the curate browser tests share: reading a puzzle's record, the keys that answer
it, and the checks that a blind view (and every API answer before the curator's answer) says nothing
about which options are targets."""
from __future__ import annotations

import json
import re

KIND_WORDS = ("target", "neighbor", "cross_video", "difficulty", "data-kind", "data-answer")


def current(page) -> str:
    return page.get_attribute("#mvp-puzzle", "data-puzzle-id")


def wait_new(page, old: str) -> str:
    page.wait_for_function(
        "old => { const el = document.querySelector('#mvp-puzzle'); return el && el.dataset.puzzleId !== old; }",
        arg=old, timeout=30000)        # one server round trip; 30 s leaves room for a loaded machine
    return current(page)


def record(app, pid: str) -> dict:
    from db.models import Puzzle
    with app.Session() as s:
        return json.loads(s.get(Puzzle, pid).record_json)


def keys_for(rec: dict, correct: bool) -> list[str]:
    """Digits that answer the puzzle: the targets in order, or as many distractors (a wrong answer)."""
    idx = {o["label"]: i + 1 for i, o in enumerate(rec["options"])}
    if correct:
        return [str(idx[a]) for a in rec["answer"]]
    wrong = [o["label"] for o in rec["options"] if o["kind"] != "target"][:len(rec["answer"])]
    return [str(idx[x]) for x in wrong]


def assert_blind(html: str, rec: dict) -> None:
    """A blind view of `rec`: no kind, difficulty, timestamp of an option or answer; every option's
    frame is named equally often (a masked frame named in the filmstrip would single out its target),
    and the option cards are identical but for label, index and frame."""
    low = html.lower()
    for w in KIND_WORDS:
        assert w not in low, f"{w!r} in the blind view of {rec['id']}"
    counts = {o["label"]: html.count(o["uri"]) for o in rec["options"]}
    assert len(set(counts.values())) == 1, counts
    for f in rec["frames"][rec["mask"]["start"]:rec["mask"]["start"] + rec["mask"]["length"]]:
        # a whole caption only: a masked frame at 6.00 s is not named by a context frame's "16.00s"
        assert not re.search(r"(?<![\d.])" + re.escape(f"{f['t']:.2f}s"), html), f"masked time {f['t']:.2f}s in the blind view"
    cards = re.findall(r'<figure class="mvp-opt.*?</figure>', html)
    assert len(cards) == len(rec["options"])
    norm = set()
    for o, card in zip(rec["options"], cards):
        c = card.replace(o["uri"], "URI").replace(f'"{o["label"]}"', '"L"').replace(f">{o['label']}<", ">L<")
        c = c.replace(f"option {o['label']}", "option L")
        norm.add(re.sub(r'data-index="\d+"|<kbd>\d+</kbd>', "", c))
    assert len(norm) == 1, norm


def watch_api(page) -> list[dict]:
    """Every answer of the curate JSON API this page receives, in order: {action, body}."""
    seen: list[dict] = []

    def on_response(resp):
        if "/curate/api/" in resp.url:
            try:
                seen.append({"action": resp.url.rsplit("/", 1)[-1], "body": resp.json()})
            except Exception:   # noqa: BLE001  a body that is not JSON is recorded as such
                seen.append({"action": resp.url.rsplit("/", 1)[-1], "body": None})
    page.on("response", on_response)
    return seen


def assert_no_leak(app, answers: list[dict], answered: set[str] | None = None) -> None:
    """No API answer carried a puzzle's targets before the curator's answer to it: walking the
    answers in order, every view of a puzzle not answered yet (in `answered`, or by an "answer"
    call earlier in the list) is blind."""
    done = set(answered or ())
    for a in answers:
        body = a["body"] or {}
        if a["action"] == "answer" and body.get("state", {}).get("pid"):
            done.add(body["state"]["pid"])
        views = [(body.get("state", {}).get("pid"), body.get("html"))]
        if body.get("next"):
            views.append((body["next"]["pid"], body["next"]["html"]))
        for pid, html in views:
            if pid and html and pid not in done:
                assert_blind(html, record(app, pid))


def solve_and_judge(page, app, correct: bool, verdict: str = "a", reject_one: bool = True) -> str:
    """On the shown (blind) puzzle: check it is blind, answer it by keyboard, wait for the revealed
    view, reject one distractor, then press the verdict key; returns the puzzle's id."""
    pid = current(page)
    rec = record(app, pid)
    assert page.get_attribute("#mvp-puzzle", "data-phase") == "answer"
    assert_blind(page.inner_html("#mvp-stage"), rec)
    for d in keys_for(rec, correct):
        page.keyboard.press(d)
    page.keyboard.press("Enter")
    page.wait_for_selector(f"#mvp-puzzle[data-puzzle-id='{pid}'][data-phase=vet]", timeout=15000)
    if reject_one:
        i = next(i for i, o in enumerate(rec["options"]) if o["kind"] != "target")
        page.keyboard.press(str(i + 1))
        page.wait_for_selector(f".mvp-opt[data-label='{rec['options'][i]['label']}'][data-state='reject']")
    page.keyboard.press(verdict)
    page.wait_for_function(
        "old => { const el = document.querySelector('#mvp-puzzle'); return el && el.dataset.puzzleId !== old; }",
        arg=pid, timeout=15000)
    return pid

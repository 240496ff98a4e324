"""HTML for the curate page, from Jinja2 templates (app/web/pages/curate/curate_*.html, autoescaped):
the context filmstrip with the gap, the option pool, progress, the filter bar, the list, the rubric.

Solve first, then vet. Until the curator has answered a puzzle (`answer` is None) the view is
*blind*: nothing in it differs between targets and distractors (no kind, difficulty, timestamp or
answer, the masked frames are not named, every option card comes from the same template macro with
the same classes), so neither the page nor its network answers tell which options are targets. Once
answered, the gap is filled with the true frames, the curator's answer is scored beside the true
one, targets are marked and the distractors can be vetted with reasons.

Pure functions of the puzzle record and the curator's current state, so the server renders one string
per action and the browser swaps it in. Frames are 240 px thumbnails (`/thumb`); play-in-gap uses the
full-size frames, named by `data-full` (app/web/pages/curate/curate.js)."""
from __future__ import annotations

from app.web.templating import render
from mvp_core.puzzle import Puzzle

REASON_TITLES = {"near_duplicate": "looks the same as a target or a shown frame",
                 "ambiguous": "could also fit the gap", "too_easy": "obviously wrong (teaches nothing)",
                 "broken_frame": "broken, black or blank frame", "other": "other (write a note)"}
DEFAULT_REASON = "ambiguous"     # a distractor rejected without a reason chosen
NOTHING_LEFT = "Nothing left to review. Thank you!"
NOTHING_MATCHES = "Nothing left in your queue under this filter (the list below shows every matching puzzle)."


def puzzle_html(p: Puzzle | None, option_verdicts: dict[str, dict], my_verdict: dict | None,
                status: str, answer: dict | None, video_name: str = "", empty_text: str = NOTHING_LEFT,
                notes: dict | None = None, can_note: bool = False) -> str:
    """The puzzle view; blind while `answer` is None. `notes`: the puzzle's tags and comments
    (`db.review.tags.notes_of`); while blind, those on a distractor are left out. `can_note`: the
    curator may tag and comment (a tag box, a comment box and each tag's remove button)."""
    if p is None:
        return render("curate_puzzle.html", p=None, empty_text=empty_text)
    return render("curate_puzzle.html", p=p, option_verdicts=option_verdicts, my_verdict=my_verdict,
                  status=status, answer=answer, video_name=video_name or p.video.path.rsplit("/", 1)[-1],
                  label_of={o.uri: o.label for o in p.options} if answer is not None else {},
                  reasons=REASON_TITLES, default_reason=DEFAULT_REASON, can_note=can_note,
                  notes=render("notes.html", puzzle_id=p.id, notes=notes, blind=answer is None,
                               removable=can_note) if notes else "")


def filmstrip_html(p: Puzzle, answered: bool) -> str:
    """Context frames in order with the gap: empty slots while blind, the true frames once answered
    (also the rollouts page's view of a puzzle)."""
    return render("curate_filmstrip.html", p=p, answered=answered,
                  label_of={o.uri: o.label for o in p.options} if answered else {})


def progress_html(prog: dict) -> str:
    return render("curate_progress.html", prog=prog)


def list_html(rows: list[dict]) -> str:
    """The filtered puzzles (the per-video view when filtered by video) as a table of links."""
    return render("curate_list.html", rows=rows)


def filter_html(videos: list[tuple[str, str]], statuses: list[str], kinds: list[str]) -> str:
    """The filter bar: videos as (id, file name), review statuses (plus "skipped"), distractor kinds."""
    return render("curate_filter.html", videos=videos, statuses=[(s, s) for s in statuses],
                  kinds=[(k, k) for k in kinds])


RUBRIC_HTML = str(render("curate_rubric.html", reasons=REASON_TITLES))
HELP_HTML = str(render("curate_help.html"))

"""What the Data page does, apart from its layout: folders of videos under the allowed roots,
synthesis as a background job (`mvp synth` through app/web/jobs.py, kind "synth"), the shortcut
audit, freezing and listing sets, and exporting a set as a zip download.

Each function takes the page's `WebContext` and returns rows or one line; bad input raises
UserError with one line (the page shows it), and nothing is half-written: synthesis is the CLI's own
process and store, a freeze is one transaction, an export is written to a fresh folder and zipped."""
from __future__ import annotations

import json
import re
import shutil
import time
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field

from app.web.common import WebContext, esc, form_number
from mvp_core.errors import UserError

EXPORTS = "exports"                 # under the data directory: the zips the page hands out
ZIP_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,200}\.zip$")
SPLITS = ("train", "val", "test")


class SynthForm(BaseModel):
    """The synthesis settings the Data page offers (the rest keep `mvp synth`'s defaults)."""
    model_config = ConfigDict(extra="forbid")
    per_video: int = Field(3, ge=1, le=100, description="puzzles per video, from different start times")
    n: int = Field(8, ge=3, le=32, description="keyframes per puzzle (N)")
    m: int = Field(3, ge=1, le=8, description="masked frames (m)")
    l: int = Field(4, ge=1, le=16, description="distractors per puzzle (l)")  # noqa: E741  the method's name
    fps: float = Field(1.0, gt=0, le=30, description="sampling rate in frames per second")
    seed: int = Field(0, ge=0, le=2**31 - 1, description="random seed (same inputs + seed => same puzzles)")
    workers: int = Field(1, ge=1, le=16, description="worker processes")
    adapt: bool = Field(False, description="a video with no puzzle at N and l tries smaller shapes (as --adapt)")
    more: bool = Field(False, description="also videos that already have puzzles (other settings add more puzzles)")


def table_html(elem_id: str, headers: list[str], rows: list[list], empty: str = "nothing yet") -> str:
    """Rows as a plain HTML table (every row in the DOM, styled for light and dark mode)."""
    if not rows:
        return f'<div class="mvp-data" id="{esc(elem_id)}"><i>{esc(empty)}</i></div>'
    head = "".join(f"<th>{esc(h)}</th>" for h in headers)
    body = "".join("<tr>" + "".join(f"<td>{esc(c)}</td>" for c in r) + "</tr>" for r in rows)
    return (f'<div class="mvp-data"><table class="mvp-table" id="{esc(elem_id)}"><thead><tr>{head}</tr></thead>'
            f'<tbody>{body}</tbody></table></div>')


def db_url(ctx: WebContext) -> str:
    return ctx.Session.kw["bind"].url.render_as_string(hide_password=False)


# ---- folders ----------------------------------------------------------------------------------

def add_folder(ctx: WebContext, path: str) -> str:
    from db.puzzles.sources import add_folder as db_add
    with ctx.Session() as s:
        real = db_add(s, path)
    found = scan_rows([real])
    n_ok = sum(1 for r in found if not r[2])
    return f"added {real}: {n_ok} videos, {len(found) - n_ok} files that will be skipped"


def scan_rows(folders: list[str]) -> list[list]:
    """[file name, folder, skip reason] for every video file under the folders (as synthesis sees them)."""
    from mvp_core.video.scan import scan
    rows = []
    for c in scan(folders):
        folder = next((f for f in folders if str(c.path).startswith(f.rstrip("/") + "/")), str(c.path.parent))
        rows.append([c.path.name, folder, c.skip_reason])
    return rows


def folder_rows(ctx: WebContext) -> list[list]:
    from db.puzzles.sources import folders
    with ctx.Session() as s:
        return scan_rows(folders(s))


def roots_text(ctx: WebContext) -> str:
    from db.puzzles.sources import allowed_roots
    with ctx.Session() as s:
        roots = allowed_roots(s)
    return ", ".join(roots) if roots else "none yet (an admin sets them on the Admin page)"


# ---- synthesis --------------------------------------------------------------------------------

def start_synth(ctx: WebContext, user: str, form: SynthForm) -> str:
    """Launch `mvp synth` on the added folders' videos. Idempotent as the CLI is (a file already
    handled under the same settings is not read again), and more: a video that already has puzzles
    is left out unless the form asks for more (`more`), so pressing Synthesize again, whatever the
    form says, never adds puzzles to videos that have some (a form's defaults that differ from the
    settings the videos were made with would otherwise add puzzles to every one)."""
    from app.web.jobs import launch_cli
    from db.puzzles.sources import folders
    with ctx.Session() as s:
        dirs = folders(s)
    if not dirs:
        raise UserError("add a folder of videos first")
    todo, have = files_to_synth(ctx, dirs, form.more)
    if not todo:
        raise UserError(f"nothing to synthesize: the {len(have)} videos of the added folders that give puzzles "
                        "already have them (tick \"also videos that already have puzzles\" to add more)")
    args = ["synth", *todo, "--data", str(ctx.data_dir), "--db", db_url(ctx), "--per-video", str(form.per_video),
            "--n", str(form.n), "--m", str(form.m), "--l", str(form.l), "--fps", str(form.fps),
            "--seed", str(form.seed), "--workers", str(form.workers), *(["--adapt"] if form.adapt else [])]
    label = f"synth {len(dirs)} folders" if todo == dirs else f"synth {len(todo)} files"
    job = launch_cli(ctx.data_dir, "synth", args, user=user, label=label,
                     meta={"settings": form.model_dump()})
    left = f"; {len(have)} videos that already have puzzles left out" if have and not form.more else ""
    return f"synthesis started ({job['label']}{left})"


def files_to_synth(ctx: WebContext, dirs: list[str], more: bool) -> tuple[list[str], list[str]]:
    """(what to hand to `mvp synth`, the files that already have puzzles). A file has puzzles when
    synthesis stored puzzles from this very file (path, size and modification time) under any
    settings. With none such, or `more`: the folders, as before. Else the folders' other files one
    by one, only those the folder scan accepted (a file named on the command line is read as given:
    a symlink out of the folder would be followed)."""
    from sqlalchemy import select

    from db.models import SynthFile
    from db.puzzles.synth_store import file_key
    from mvp_core.video.scan import scan
    found = scan(dirs)
    stored = [str(c.path) for c in found if _utf8(str(c.path))]
    with ctx.Session() as s:
        done = {(r.path, r.size, r.mtime_ns) for r in s.execute(
            select(SynthFile.path, SynthFile.size, SynthFile.mtime_ns)
            .where(SynthFile.status == "done", SynthFile.video_id.is_not(None), SynthFile.path.in_(stored)))}
    have = [f for f in stored if file_key(Path(f)) in done]
    if more or not have:
        return list(dirs), have
    return [str(c.path) for c in found if not c.skip_reason and str(c.path) not in set(have)], have


def _utf8(text: str) -> bool:
    """Whether a path can be stored as text (a name that is not UTF-8 never is: scan says so)."""
    try:
        text.encode("utf-8")
        return True
    except UnicodeEncodeError:
        return False


def in_form_words(reason: str, settings: dict | None) -> str:
    """A skip reason of `mvp synth` in the Data form's terms: the CLI's flags as the form's fields, and
    a sampling rate raised for a short video said to be raised from the rate the form gave."""
    if not settings:
        return reason
    names = {"n": "N", "m": "m", "l": "l", "fps": "fps", "per-video": "puzzles per video"}
    flag = r"--(n|m|l|fps|per-video) ([0-9.]+)"
    reason = re.sub(rf"{flag}(?: {flag})*", lambda run: ", ".join(
        f"{names[f]} {v}" for f, v in re.findall(flag, run.group(0))), reason)
    reason = reason.replace("(or --adapt)", "(or tick adapt)")
    given = settings.get("fps")

    def rate(mt) -> str:
        got = float(mt.group(1))
        if given is None or abs(got - float(given)) < 1e-6:
            return mt.group(0)
        how = "raised for a short video" if got > float(given) else "lowered for a long video"
        return f"{mt.group(0)} (the form's {float(given):g} fps, {how})"
    return re.sub(r"sampled at ([0-9.]+) fps", rate, reason)


def skipped_rows(log_lines: list[str], settings: dict | None) -> list[list[str]]:
    """[file name, reason in the form's words] of each `  SKIP <path>: <reason>` line `mvp synth`
    printed. The reason may hold ": " itself ("fewer masked frames would: --m 1 ..."), and so may a
    path: the path ends at the first ": " that leaves an existing file, else at the first one."""
    out = []
    for ln in log_lines:
        if not ln.startswith("  SKIP "):
            continue
        text = ln[len("  SKIP "):]
        cuts = [i for i in range(len(text)) if text.startswith(": ", i)]
        cut = next((i for i in cuts if Path(text[:i]).is_file()), cuts[0] if cuts else len(text))
        out.append([Path(text[:cut]).name, in_form_words(text[cut + 2:], settings)])
    return out


def synth_status(ctx: WebContext) -> dict:
    """{"state", "done", "total", "summary", "skipped": [[file, reason]], "html"} of the last synthesis job."""
    from app.web.jobs import active, log_tail
    job = active(ctx.data_dir, "synth")
    if job is None:
        return {"state": "none", "done": 0, "total": 0, "summary": "", "skipped": [],
                "html": '<div class="mvp-data" id="synth-status" data-state="none">no synthesis yet</div>'}
    state = job["status"]["state"]
    prog = job["progress"]
    tail = log_tail(job["log"], 400).splitlines()
    summary = next((ln for ln in reversed(tail) if ln.startswith("synth: ")), "")
    skipped = skipped_rows(tail, job.get("settings"))
    errors = [ln for ln in tail if ln.startswith("error:") or ln.startswith("Traceback")]
    total = prog["total"] or 0
    pct = 100.0 * prog["done"] / total if total else (100.0 if state == "done" else 0.0)
    lines = "".join(f"<li class='mvp-skip'>{esc(f)}: {esc(r)}</li>" for f, r in skipped)
    html = (f'<div class="mvp-data" id="synth-status" data-state="{esc(state)}" data-done="{prog["done"]}" '
            f'data-total="{total}"><div>synthesis: <b>{esc(state)}</b> · {prog["done"]} / {total} videos</div>'
            f'<div class="mvp-bar"><div style="width:{pct:.1f}%"></div></div>'
            + (f'<p id="synth-summary">{esc(summary)}</p>' if summary else "")
            + (f'<p>skipped files:</p><ul id="synth-skipped">{lines}</ul>' if skipped else "")
            + (f'<pre>{esc(chr(10).join(tail[-8:]))}</pre>' if errors or state == "failed" else "") + "</div>")
    return {"state": state, "done": prog["done"], "total": total, "summary": summary, "skipped": skipped,
            "html": html}


# ---- audit ------------------------------------------------------------------------------------

AUDIT_HEADERS = ["group", "puzzles", "solver", "mean reward", "exact", "exact 95% CI", "chance exact",
                 "beats chance"]


def audit_rows(ctx: WebContext) -> list[list]:
    """The shortcut audit over every puzzle in the store, one row per group and solver; each
    solver's result per puzzle is stored too (the gallery's audit flag)."""
    from sqlalchemy import select

    from db.models import Puzzle as PuzzleRow
    from db.puzzles.audit_results import store_results
    from mvp_core.puzzle import Puzzle
    from mvp_core.synth.audit import audit_puzzles
    from mvp_core.video.frames import FrameStore
    with ctx.Session() as s:
        puzzles = [Puzzle.from_dict(json.loads(r)) for r in s.scalars(select(PuzzleRow.record_json).order_by(PuzzleRow.id))]
    if not puzzles:
        raise UserError("no puzzles to audit: synthesize first")
    report, results = audit_puzzles(puzzles, FrameStore(ctx.data_dir).load)
    with ctx.Session() as s:
        store_results(s, results)
    return [[g, r["n"], name, round(v["mean_reward"], 4), round(v["exact"], 4),
             "[{:.3f}, {:.3f}]".format(*v["exact_ci95"]), round(r["chance_exact"], 4), "yes" if v["flagged"] else ""]
            for g, r in report["groups"].items() for name, v in r["solvers"].items()]


# ---- sets -------------------------------------------------------------------------------------

def parse_splits(train: float, val: float, test: float) -> dict[str, float]:
    fr = {k: form_number(f"{k} fraction", v, default=0.0) for k, v in (("train", train), ("val", val), ("test", test))}
    if any(v < 0 or v > 1 for v in fr.values()) or abs(sum(fr.values()) - 1.0) > 1e-6:
        raise UserError("split fractions must be between 0 and 1 and add up to 1")
    return fr


def freeze(ctx: WebContext, uid: int, name: str, min_distractors: int, train: float, val: float,
           test: float) -> str:
    """Freeze the accepted puzzles into a new set, split by video."""
    from db.sets.curated import freeze_set
    least = form_number("least distractors left", min_distractors, True, 0)
    fr = parse_splits(train, val, test)
    with ctx.Session() as s:
        res = freeze_set(s, (name or "").strip(), min_distractors=least, created_by=uid, split=fr)
    with ctx.Session() as s:
        counts = _per_split(s, res["name"])
    shown = ", ".join(f"{k} {v['puzzles']} ({v['videos']} videos)" for k, v in counts.items())
    return f"froze {res['name']}: {res['n_puzzles']} puzzles ({shown}), {res['n_excluded']} excluded"


SET_HEADERS = ["set", "puzzles", *(f"{k} puzzles / videos" for k in SPLITS), "excluded", "content hash", "created"]


def set_rows(ctx: WebContext) -> list[list]:
    """One row per set: its size, and puzzles / videos per split."""
    from db.sets.curated import list_sets
    rows = []
    with ctx.Session() as s:
        for cs in list_sets(s):
            c = _per_split(s, cs["name"])
            per = [f"{c[k]['puzzles']} / {c[k]['videos']}" if k in c else "0 / 0" for k in SPLITS]
            rows.append([cs["name"], cs["n_puzzles"], *per, cs["n_excluded"], cs["content_hash"][:12],
                         str(cs["created_at"])[:19]])
    return rows


def _per_split(s, name: str) -> dict[str, dict[str, int]]:
    """{split: {"puzzles", "videos"}} of a set (db/sets/split_summary.py), a record without a split (a set
    frozen before splits) under train, as exports and training read it."""
    from db.sets.split_summary import split_summary
    out: dict[str, dict[str, int]] = {}
    for k, v in split_summary(s, name).items():
        cell = out.setdefault(k or "train", {"puzzles": 0, "videos": 0})
        cell["puzzles"] += v["puzzles"]
        cell["videos"] += v["videos"]
    return out


def set_names(ctx: WebContext) -> list[str]:
    from db.sets.curated import list_sets
    with ctx.Session() as s:
        return [cs["name"] for cs in list_sets(s)]


def export_zip(ctx: WebContext, name: str, fmt: str) -> Path:
    """Export the set into a fresh folder and zip it under DATA/exports; returns the zip's path."""
    from db.sets.export import export_set
    from mvp_core.export.formats import FORMATS
    if fmt not in FORMATS:
        raise UserError(f"format must be one of {', '.join(FORMATS)}")
    if not name:
        raise UserError("choose a set to export")
    base = Path(ctx.data_dir) / EXPORTS
    base.mkdir(parents=True, exist_ok=True)
    stem = f"{name}-{fmt}-{time.strftime('%Y%m%d-%H%M%S')}"
    work = base / f".{stem}"
    try:
        with ctx.Session() as s:
            export_set(s, name, fmt, work, ctx.data_dir)
        tmp = shutil.make_archive(str(base / f".{stem}.part"), "zip", root_dir=work)
        final = base / f"{stem}.zip"
        Path(tmp).replace(final)           # appears whole or not at all
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return final


def export_file(ctx: WebContext, file_name: str) -> Path:
    """The zip behind a download link: a plain zip name under DATA/exports that the one rule for served
    files accepts (app/web/files.py: no link to the database, no renamed copy of it)."""
    from app.web.files import PathRefused, servable
    if not ZIP_RE.match(file_name or ""):
        raise UserError("no such export")
    try:
        return servable(Path(ctx.data_dir), f"{EXPORTS}/{file_name}")
    except PathRefused as e:
        raise UserError("no such export") from None     # the same line whatever the reason

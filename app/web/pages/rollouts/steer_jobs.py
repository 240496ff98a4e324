"""Rollouts page, "Train a steering bank": `mvp steer build` (app/cli/steer_build.py) of a run's
checkpoint on a curated set split as a background job of kind "steer" (app/web/jobs.py: one at a
time, progress from its log, re-attached after a reload), its per-layer table when done, and the
banks under DATA/steer/ listed with the model each was trained on (docs/steer.md). The model is
chosen as a run and checkpoint, never typed as a path; the train split is the default (the set's
held-out splits stay unseen by the bank)."""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import gradio as gr

from app.web import jobs
from app.web.common import WebContext, esc, form_number, guard, msg_html, on_latest, whole_number
from mvp_core.errors import UserError

PAGE = "rollouts"
KIND = "steer"
PHASE = "steer build: phase "
DEFAULT_LABELS = "greedy"          # the form's first choice of labels (app/cli/steer_build.py LABEL_SOURCES)
SCROLL = "overflow-x: auto; max-width: 100%"      # a wide table scrolls on a phone, the page keeps its width
JOB_STYLE = "font-size: .9rem; overflow-wrap: anywhere"   # wraps at 390 px (the shared .mvp-job is 22rem wide)


def bank_infos(data_dir: Path) -> list[dict]:
    """[{name, model, origin, layers, steers, best_val_bal_acc}] of the banks under DATA/steer/; a file
    that is not a bank is listed with its one-line reason instead of its model."""
    d = Path(data_dir) / "steer"
    files = sorted(d.glob("*.pt")) if d.is_dir() else []
    if not files:
        return []           # before the import: a bank is a torch file, and torch is 700 MB the page need not hold
    from mvp_core.steer.bank import EnergyBank
    out = []
    for p in files:
        try:
            b = EnergyBank.load(p)
        except UserError as e:
            out.append({"name": p.name, "model": f"(unreadable: {e})", "origin": "", "layers": 0, "steers": [],
                        "best": None})
            continue
        x = b.extra or {}
        origin = f"set {x['set']}" + (f"/{x['split']}" if x.get("split") else "") if x.get("set") else ""
        out.append({"name": p.name, "model": model_label(b), "origin": origin, "layers": len(b.models),
                    "steers": b.chosen_layers(), "best": max(m.val_bal_acc for m in b.metrics.values())})
    return out


def model_label(bank) -> str:
    """The model a bank was trained on, as the page names it: the run and checkpoint for a bank made
    here, else the model directory's name `mvp steer collect` recorded."""
    x = bank.extra or {}
    if x.get("model_label"):
        return str(x["model_label"])
    return Path(bank.model_name).name or bank.model_name or "(unnamed model)"


def banks_html(infos: list[dict]) -> str:
    if not infos:
        return '<div id="ro-bank-list" class="mvp-cap">no energy bank yet</div>'
    rows = "".join(
        f'<tr data-bank="{esc(b["name"])}"><td>{esc(b["name"])}</td><td class="mvp-bank-model">{esc(b["model"])}</td>'
        f'<td>{esc(b["origin"])}</td><td>{b["layers"]}</td><td>{esc(", ".join(map(str, b["steers"])))}</td>'
        f'<td>{_num(b["best"])}</td></tr>' for b in infos)
    return (f'<div style="{SCROLL}"><table id="ro-bank-list"><tr><th>bank</th><th>trained on</th>'
            '<th>collected on</th><th>layers</th>'
            f'<th>steers</th><th>best val bal. acc.</th></tr>{rows}</table></div>')


def _num(v) -> str:
    return "" if v is None else f"{v:.3f}"


def job_html(data_dir: Path) -> str:
    """The last bank job: state, phase, progress bar; when done the bank's per-layer table (the one
    `mvp steer train` prints); when failed its last lines."""
    job = jobs.active(data_dir, KIND)
    if job is None:
        return f'<div id="ro-bank-job" style="{JOB_STYLE}" data-state="none">no bank trained from this page yet</div>'
    state, p = job["status"]["state"], job["progress"]
    tail = jobs.log_tail(job["log"], 200).splitlines()
    phase = next((ln[len(PHASE):] for ln in reversed(tail) if ln.startswith(PHASE)), "starting")
    pct = 100.0 if state == "done" else (100.0 * p["done"] / p["total"] if p["total"] else 0.0)
    bank = Path(data_dir) / "steer" / f"{job.get('bank', '')}.pt"
    summary = _summary_html(bank) if state == "done" and bank.is_file() else ""
    errors = [ln for ln in tail if ln.startswith("error:")] or tail[-6:]
    failed = (f'<pre id="ro-bank-error" style="white-space: pre-wrap; overflow-wrap: anywhere">'
              f'{esc(chr(10).join(errors))}</pre>' if state == "failed" else "")
    return (f'<div id="ro-bank-job" style="{JOB_STYLE}" data-state="{esc(state)}" data-done="{p["done"]}" '
            f'data-total="{p["total"]}"><b>bank {esc(job.get("bank", ""))}</b> · {esc(state)} · {esc(job["label"])} · '
            f'phase {esc(phase)} · {p["done"]}/{p["total"] or "?"} · by {esc(job["user"])}'
            f'<div class="mvp-bar"><div style="width:{pct:.0f}%"></div></div>{summary}{failed}</div>')


def _summary_html(bank_file: Path) -> str:
    from mvp_core.steer.bank import EnergyBank
    b = EnergyBank.load(bank_file)
    rank = {li: i + 1 for i, li in enumerate(b.ranking())}
    rows = "".join(f"<tr><td>{li}</td><td>{rank[li]}</td><td>{m.val_bal_acc:.3f}</td><td>{m.val_auroc:.3f}</td>"
                   f"<td>{m.test_bal_acc:.3f}</td><td>{m.test_auroc:.3f}</td></tr>"
                   for li, m in sorted(b.metrics.items()))
    return (f'<div style="{SCROLL}"><table id="ro-bank-summary"><tr><th>layer</th><th>rank</th>'
            '<th>val bal. acc.</th><th>val AUROC</th>'
            f'<th>test bal. acc.</th><th>test AUROC</th></tr>{rows}</table></div>'
            f'<div class="mvp-cap">steers layers {esc(", ".join(map(str, b.chosen_layers())))} '
            '(ranked by validation; the test columns are not used to choose)</div>')


def _newest_checkpoint(s, run_id: str | None) -> dict:
    """The Checkpoint picker's update for `run_id`: its model versions, the newest chosen."""
    from db.runs.index import checkpoint_choices
    if not run_id:
        return gr.update(choices=[], value=None)
    cks = checkpoint_choices(s, run_id)
    return gr.update(choices=cks, value=cks[-1][1])


def _train_split(s, set_name: str | None) -> dict:
    """The Split picker's update for `set_name`: the whole set or one split, train chosen where it has one."""
    from db.runs.rollout_views import set_splits
    if not set_name:
        return gr.update(choices=[], value=None)
    splits = set_splits(s, set_name)
    return gr.update(choices=[("whole set", "")] + [(x, x) for x in splits], value="train" if "train" in splits else "")


def label_plan(ctx: WebContext, run_id, ck, set_name, split, labels_from) -> dict:
    """{good, bad, videos, ok, text}: how many puzzles of each label the form's choice gives, said
    before the launch; `ok` whether the bank's train, validation and test splits (by video,
    mvp_core/steer/splits.py draw_splits) each get both kinds. Greedy labels are known only once the
    model answers: `ok` None."""
    from app.cli.steer_build import LABEL_SOURCES, STORED
    from db.runs.steer_labels import labelled_puzzles, puzzle_videos
    from mvp_core.steer.config import EnergyConfig
    from mvp_core.steer.splits import draw_splits
    what = LABEL_SOURCES.get(labels_from, str(labels_from))
    if labels_from not in STORED:
        from db.sets.split_summary import split_summary
        if not set_name:
            return {"good": 0, "bad": 0, "videos": 0, "ok": False, "text": f"{what}: choose a curated set to answer"}
        with ctx.Session() as s:
            n = sum(v["puzzles"] for k, v in split_summary(s, set_name).items() if not split or k == split)
        return {"good": 0, "bad": 0, "videos": 0, "ok": None,
                "text": f"{what}: right and wrong are known only once the model answers the {n} puzzles of "
                        f"set {set_name}{'/' + split if split else ''} (at the launch)"}
    step = None if not ck or ck == "base" else int(ck)
    with ctx.Session() as s:
        try:
            labels = labelled_puzzles(s, labels_from, run_id, step, set_name, split)
        except UserError as e:
            return {"good": 0, "bad": 0, "videos": 0, "ok": False, "text": f"{what}: {e}"}
        videos = puzzle_videos(s, list(labels))
    ids = sorted(labels)
    bad = [labels[p] for p in ids]
    n_bad, n_videos = sum(bad), len({videos.get(p) for p in ids})
    good_word, bad_word = ("accepted", "rejected") if labels_from == "verdicts" else ("right", "wrong")
    text = (f"{what}: {len(ids) - n_bad} good ({good_word}) and {n_bad} bad ({bad_word}) puzzles "
            f"from {n_videos} videos")
    try:
        draw_splits(bad, EnergyConfig(), [videos.get(p) for p in ids])
    except UserError as e:
        return {"good": len(ids) - n_bad, "bad": n_bad, "videos": n_videos, "ok": False,
                "text": f"{text}: not enough for a bank ({e})"}
    return {"good": len(ids) - n_bad, "bad": n_bad, "videos": n_videos, "ok": True, "text": text}


def plan_html(plan: dict) -> str:
    kind = {True: "info", False: "warn", None: "info"}[plan["ok"]]
    return (f'<div id="ro-bank-plan" class="mvp-msg mvp-msg-{kind}" data-good="{plan["good"]}" '
            f'data-bad="{plan["bad"]}" data-ok="{"" if plan["ok"] is None else int(plan["ok"])}">{esc(plan["text"])}</div>')


def start(ctx: WebContext, db_url: str, user: str, run_id, ck, set_name, split, name, labels_from, epochs, hidden,
          limit) -> str:
    """Check the form (one line per mistake, before anything starts), then launch the job."""
    from app.cli.steer_build import LABEL_SOURCES, STORED, bank_paths
    from db.runs.index import checkpoint_choices
    from db.runs.rollout_views import run_info, set_splits
    from db.sets.curated import list_sets
    from mvp_core.steer.config import EnergyConfig
    epochs = form_number("epochs", epochs, True, 120)
    limit = form_number("at most N puzzles", limit, True, 0)
    if not run_id or not ck:
        raise UserError("choose a run and a checkpoint (the model the bank is for)")
    if not set_name and labels_from not in STORED:
        raise UserError("choose a curated set to collect on")
    bank_paths(ctx.data_dir, name or "")
    name = name.strip().removesuffix(".pt")
    if labels_from not in LABEL_SOURCES:
        raise UserError(f"labels must come from one of {', '.join(LABEL_SOURCES)}")
    try:
        EnergyConfig.from_values({"hidden": [int(x) for x in str(hidden or "").split(",")], "epochs": epochs})
    except (ValueError, UserError) as e:
        raise UserError(f"bad energy settings: {str(e).splitlines()[0]}") from None
    if limit < 0:
        raise UserError(f"at most N puzzles must be 0 (all) or more, got {limit}")
    with ctx.Session() as s:
        if not run_info(s, run_id).get("model_path"):
            raise UserError(f"run {run_id} has no model to steer")
        if ck not in [k for _, k in checkpoint_choices(s, run_id)]:
            raise UserError(f"run {run_id} has no checkpoint {ck}")
        if set_name and set_name not in [x["name"] for x in list_sets(s)]:
            raise UserError(f"no curated set {set_name!r}")
        if set_name and split and split not in set_splits(s, set_name):
            raise UserError(f"set {set_name} has no split {split!r}")
    plan = label_plan(ctx, run_id, ck, set_name, split, labels_from)
    if plan["ok"] is False:
        raise UserError(plan["text"])
    where = ["--set", set_name, "--split", split or ""] if set_name else []
    args = ["steer", "build", "--run", run_id, "--checkpoint", ck, *where,
            "--name", name, "--labels-from", labels_from, "--epochs", str(epochs), "--hidden", str(hidden),
            "--threads", "1", "--data", str(ctx.data_dir), "--db", db_url, *(["--limit", str(limit)] if limit else [])]
    label = f"{run_id} · {'start' if ck == 'base' else 'step ' + ck} · " + (
        f"{set_name}" + (f"/{split}" if split else "") if set_name else "every labelled puzzle")
    job = jobs.launch_cli(ctx.data_dir, KIND, args, user=user, label=label,
                          meta={"bank": name, "run_id": run_id, "checkpoint": ck, "set": set_name, "split": split})
    return f"training bank {name} for {job['label']} (pid {job['pid']})"


@dataclass
class BankSection:
    load: object            # request -> load_outputs
    load_outputs: list


def build_section(ctx: WebContext, db_url: str, bank_dropdown: gr.Dropdown, bank_choices) -> BankSection:
    """The section's layout and events; `bank_dropdown` (the comparison panel's) gets the new bank
    when a job ends, `bank_choices(data_dir)` its choices."""
    from app.cli.steer_build import LABEL_SOURCES
    with gr.Accordion("Train a steering bank (background job)", open=False, elem_id="ro-bank-panel") as panel:
        with gr.Row():
            run = gr.Dropdown(label="Run (the model the bank is for)", choices=[], elem_id="ro-bank-run")
            ckpt = gr.Dropdown(label="Checkpoint", choices=[], elem_id="ro-bank-ckpt")
            set_dd = gr.Dropdown(label="Curated set (greedy: the puzzles answered; else its other splits "
                                       "are left out)", choices=[], elem_id="ro-bank-set")
            split = gr.Dropdown(label="Split (train: the held-out splits stay unseen)", choices=[],
                                elem_id="ro-bank-split")
            labels = gr.Dropdown(label="labels from", choices=[(v, k) for k, v in LABEL_SOURCES.items()],
                                 value=DEFAULT_LABELS, elem_id="ro-bank-labels")
        with gr.Row():
            name = gr.Textbox(label="bank name (DATA/steer/NAME.pt)", max_length=64, elem_id="ro-bank-name")
            epochs = whole_number(120, "epochs", minimum=1, maximum=10000, elem_id="ro-bank-epochs")
            hidden = gr.Textbox(label="energy MLP hidden sizes", value="2048,1024,1024,512", max_length=200,
                                elem_id="ro-bank-hidden")
            limit = whole_number(0, "at most N puzzles (0 = all)", elem_id="ro-bank-limit")
            go = gr.Button("Train the bank", variant="primary", elem_id="ro-bank-launch")
        plan = gr.HTML(elem_id="ro-bank-plan-box")
        msg = gr.HTML(elem_id="ro-bank-msg")
        status = gr.HTML(elem_id="ro-bank-status")
        listing = gr.HTML(elem_id="ro-bank-list-box")
    timer = gr.Timer(1.0, active=False)

    def alive() -> bool:
        job = jobs.active(ctx.data_dir, KIND)
        return bool(job and job["alive"])

    def on_load(request: gr.Request):
        """The section's first view in the page's load answer: the first run with a model and its newest
        checkpoint, the newest set and its train split, the labels that choice gives, the job and the
        banks (the comparison's bank choices too: a bank written since the app started). A value set by
        an answer fires no `.input`, so nothing more runs after it (docs/web.md, "Pickers a load fills")."""
        with guard(ctx, request, PAGE):
            from db.runs.index import list_runs
            from db.sets.curated import list_sets
            with ctx.Session() as s:
                runs = [r["id"] for r in list_runs(s) if r["model_path"]]
                sets = [x["name"] for x in list_sets(s)]
                run_id, set_name = (runs[0] if runs else None), (sets[-1] if sets else None)
                ck, sp = _newest_checkpoint(s, run_id), _train_split(s, set_name)
            # a bank job (running or ended) re-attaches open, its status drawn, after a reload
            return [gr.update(choices=runs, value=run_id), ck, gr.update(choices=sets, value=set_name), sp,
                    plan_html(label_plan(ctx, run_id, ck["value"], set_name, sp["value"], DEFAULT_LABELS)),
                    job_html(ctx.data_dir), banks_html(bank_infos(ctx.data_dir)), gr.Timer(active=alive()),
                    gr.update(open=True) if jobs.active(ctx.data_dir, KIND) is not None else gr.skip(),
                    gr.update(choices=bank_choices(ctx.data_dir))]

    def on_form(run_id, ck, set_name, sp, lf, evt: gr.EventData, request: gr.Request):
        """[checkpoint, split, plan] after a person's pick: a new run gets its newest checkpoint, a new
        set its train split, and every pick the count of labels the form now gives."""
        with guard(ctx, request, PAGE):
            ck_out, sp_out = gr.skip(), gr.skip()
            picked = getattr(evt.target, "elem_id", None)
            with ctx.Session() as s:
                if picked == run.elem_id:
                    ck_out = _newest_checkpoint(s, run_id)
                    ck = ck_out["value"]
                if picked == set_dd.elem_id:
                    sp_out = _train_split(s, set_name)
                    sp = sp_out["value"]
            return ck_out, sp_out, plan_html(label_plan(ctx, run_id, ck, set_name, sp, lf))

    def on_go(run_id, ck, set_name, sp, lf, nm, ep, hid, lim, request: gr.Request):
        with guard(ctx, request, PAGE):
            text = start(ctx, db_url, request.username, run_id, ck, set_name, sp, nm, lf, ep, hid, lim)
            return msg_html(text), job_html(ctx.data_dir), gr.Timer(active=True)

    def on_tick(request: gr.Request):
        """Progress while the job runs; when it ends, the bank list and the comparison's bank choices too."""
        with guard(ctx, request, PAGE):
            running = alive()
            ended = [gr.skip(), gr.skip()] if running else [banks_html(bank_infos(ctx.data_dir)),
                                                            gr.update(choices=bank_choices(ctx.data_dir))]
            return [job_html(ctx.data_dir), *ended, gr.Timer(active=running)]

    # one event for every pick (a later pick runs after it with the form as it is then: the count shown is
    # the last choice's); `.input`: the page's load fills the form in its own answer (on_load)
    on_latest([run.input, ckpt.input, set_dd.input, split.input, labels.input], on_form,
              [run, ckpt, set_dd, split, labels], [ckpt, split, plan], show_progress="hidden")
    go.click(on_go, [run, ckpt, set_dd, split, labels, name, epochs, hidden, limit], [msg, status, timer],
             api_name="steer_bank_launch")
    timer.tick(on_tick, None, [status, listing, bank_dropdown, timer], show_progress="hidden")
    return BankSection(load=on_load, load_outputs=[run, ckpt, set_dd, split, plan, status, listing, timer, panel,
                                                   bank_dropdown])

"""Rollouts page panel: the same puzzle answered with and without energy steering, side by side,
with each answer's reward terms and, per steered layer, the energy of the prompt's last state before
and after the gradient steps (docs/steer.md). Banks are the `.pt` files under DATA/steer/; the model
is the run's own model path, so the page never opens a path a user typed. A bank steers only the
model it was trained on (its fingerprint): another is refused with one line unless "apply to another
model anyway" is ticked (force_bank). Banks are trained from the page in steer_jobs.py."""
from __future__ import annotations

from functools import lru_cache
from pathlib import Path

import gradio as gr

from app.web.common import WebContext, esc, form_number, guard, msg_html, whole_number
from db.runs import rollout_views as rd
from mvp_core.errors import UserError

PAGE = "rollouts"
TERMS = ("format", "selection", "order", "exact", "total")


def bank_names(data_dir: Path) -> list[str]:
    d = Path(data_dir) / "steer"
    return sorted(p.name for p in d.glob("*.pt")) if d.is_dir() else []


def bank_choices(data_dir: Path) -> list[tuple[str, str]]:
    """(label, file name) of each bank: the label names the model it was trained on."""
    from app.web.pages.rollouts.steer_jobs import bank_infos
    return [(f"{b['name']} · trained on {b['model']}", b["name"]) for b in bank_infos(data_dir)]


@lru_cache(maxsize=2)
def _policy(path: str):
    from mvp_core.model.policy import load_policy
    return load_policy(path, dtype="float32", device="cpu")


def compare_puzzle(model, proc, bank, record: dict, load_frame, cfg, max_new_tokens: int = 64) -> dict:
    """{plain: row, steered: row, energies: {layer: {before, after, steps}}} for one puzzle (greedy)."""
    from mvp_core.steer.puzzles import greedy_rows
    from mvp_core.steer.steer import Steering
    plain = greedy_rows(model, proc, [record], load_frame, max_new_tokens)[0]
    st = Steering(model, bank, cfg, record=True)
    steered = greedy_rows(model, proc, [record], load_frame, max_new_tokens, steering=st)[0]
    energies = {li: {"before": r["before"][0], "after": r["after"][0], "steps": r["steps"][0]}
                for li, r in sorted(st.prefill_energies().items())}
    return {"plain": plain, "steered": steered, "energies": energies}


def _answer_html(title: str, row: dict) -> str:
    terms = "".join(f"<td>{row[t]:.2f}</td>" for t in TERMS)
    return (f'<div class="mvp-steer-answer"><h4>{esc(title)}</h4><pre class="mvp-think">{esc(row["completion"])}</pre>'
            f'<div class="mvp-cap">chosen: {esc(", ".join(row["chosen_labels"]) or "(none)")}</div>'
            f'<table><tr>{"".join(f"<th>{t}</th>" for t in TERMS)}</tr><tr>{terms}</tr></table></div>')


def compare_html(result: dict, truth: list[str]) -> str:
    e = "".join(f'<tr><td>{li}</td><td>{v["before"]:+.3f}</td><td>{v["after"]:+.3f}</td><td>{v["steps"]}</td></tr>'
                for li, v in result["energies"].items())
    changed = result["plain"]["completion"] != result["steered"]["completion"]
    return (f'<div class="mvp-steer" data-changed="{int(changed)}"><div class="mvp-cap">true answer: '
            f'{esc(", ".join(truth))}</div><div class="mvp-side">{_answer_html("unsteered", result["plain"])}'
            f'{_answer_html("steered", result["steered"])}</div>'
            f'<h4>Energy of the prompt\'s last state, per steered layer</h4><table class="mvp-steer-energy">'
            f'<tr><th>layer</th><th>before</th><th>after</th><th>steps</th></tr>{e}</table></div>')


def build_panel(ctx: WebContext, run: gr.Dropdown, puzzle: gr.Dropdown, db_url: str):
    """Add the panel and the bank-training section (steer_jobs.py) to the enclosing Blocks; `run` and
    `puzzle` are the page's own pickers. Returns the section's (load, outputs) for the page's load."""
    with gr.Accordion("Energy steering: steered vs unsteered answer", open=False):
        with gr.Row():
            bank = gr.Dropdown(label="Energy bank (DATA/steer/*.pt)", choices=bank_choices(ctx.data_dir),
                               elem_id="ro-steer-bank")
            eta = gr.Number(label="eta", value=0.5, minimum=0.001, maximum=100, elem_id="ro-steer-eta")
            steps = whole_number(5, "K steps", minimum=1, maximum=1000, elem_id="ro-steer-steps")
            top_k = whole_number(3, "top-k layers", minimum=1, maximum=512, elem_id="ro-steer-top-k")
            layers = gr.Textbox(label="layers (e.g. 2,3; empty: the top-k)", value="", max_length=2000,
                                elem_id="ro-steer-layers")
            gate = gr.Dropdown(label="gate", choices=["off", "entry", "while"], value="off")
            positions = gr.Dropdown(label="steer", choices=[("every position (published)", "every"),
                                                            ("the prompt's last token only", "prompt")],
                                    value="every", elem_id="ro-steer-positions")
        # a bank steers only the model it was trained on (its fingerprint, docs/steer.md) unless ticked
        force = gr.Checkbox(label="apply to another model anyway (the bank was trained on another model)",
                            value=False, elem_id="ro-steer-force")
        go = gr.Button("Answer with and without steering", elem_id="ro-steer-go")
        out = gr.HTML(elem_id="ro-steer-out")

        def on_go(run_id, pid, bank_name, eta_v, k_steps, k_layers, layers_v, gate_v, pos_v, force_v,
                  request: gr.Request, progress=gr.Progress(track_tqdm=True)):  # noqa: B008 - Gradio injects it
            with guard(ctx, request, PAGE):
                from mvp_core.model.rollout import frame_loader
                from mvp_core.steer.bank import EnergyBank
                from mvp_core.steer.config import SteerConfig, parse_layers
                k_steps, k_layers = form_number("K steps", k_steps, True), form_number("top-k layers", k_layers, True)
                if not run_id or not pid or bank_name not in bank_names(ctx.data_dir):
                    return msg_html("choose a run, a puzzle and an energy bank first", "warn")
                # the config's own validation (empty, NaN, 2.5 steps, out of range: one line), before any work
                try:
                    chosen = parse_layers(layers_v if isinstance(layers_v, str) else None)
                except ValueError as e:
                    raise UserError(str(e)) from None
                cfg = SteerConfig.from_values({"eta": eta_v, "steps": k_steps, "top_k": k_layers, "layers": chosen,
                                               "gate": gate_v, "positions": pos_v or "every",
                                               "force_bank": bool(force_v)})
                with ctx.Session() as s:
                    rec, info = rd.record_seen(s, run_id, pid), rd.run_info(s, run_id)
                energy_bank = EnergyBank.load(ctx.data_dir / "steer" / bank_name)
                energy_bank.chosen_layers(cfg)            # a layer the bank has no energy for: refused before loading
                model, proc = _policy(info["model_path"])
                energy_bank.check_model(model, force=cfg.force_bank)   # refused before any answer is made
                res = compare_puzzle(model, proc, energy_bank, rec, frame_loader(ctx.data_dir), cfg)
                return compare_html(res, rec["answer"])
        go.click(on_go, [run, puzzle, bank, eta, steps, top_k, layers, gate, positions, force], [out],
                 api_name="steer_compare")

        def on_bank(bank_name, request: gr.Request):
            """A bank carries the settings it was trained for (`mvp steer train --eta ...`): start from them."""
            with guard(ctx, request, PAGE):
                from mvp_core.steer.bank import EnergyBank
                if bank_name not in bank_names(ctx.data_dir):
                    return [gr.update()] * 6
                c = EnergyBank.load(ctx.data_dir / "steer" / bank_name).steer_config
                return c.eta, c.steps, c.top_k, ",".join(map(str, c.layers or [])), c.gate, c.positions
        bank.change(on_bank, [bank], [eta, steps, top_k, layers, gate, positions], api_name="steer_bank_settings")
        # banks written after the app started show up when a run is picked (and at the page's load: the
        # bank section's load answer, steer_jobs.py)
        run.input(lambda: gr.update(choices=bank_choices(ctx.data_dir)), None, [bank], show_progress="hidden")
    from app.web.pages.rollouts.steer_jobs import build_section
    section = build_section(ctx, db_url, bank, bank_choices)
    return section.load, section.load_outputs

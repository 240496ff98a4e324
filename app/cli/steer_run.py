"""The work behind `mvp steer` (app/cli/steer.py holds the arguments): collect, generate, eval."""
from __future__ import annotations

import csv
import json
import sys
from collections import Counter
from pathlib import Path

from mvp_core.errors import UserError
from mvp_core.jsonl import read_user_text


def _table(header: list[str], rows: list[list]) -> str:
    cells = [header] + [[f"{v:.3f}" if isinstance(v, float) else str(v) for v in r] for r in rows]
    w = [max(len(r[i]) for r in cells) for i in range(len(header))]
    lines = ["  ".join(c.ljust(w[i]) for i, c in enumerate(r)) for r in cells]
    return "\n".join([lines[0], "  ".join("-" * x for x in w)] + lines[1:])


def read_prompts(path: str, fmt: str = "auto"):
    from mvp_core.steer import data
    p = Path(path)
    if fmt == "auto":
        if p.suffix.lower() in (".jsonl", ".json"):
            fmt = "jsonl"
        else:
            lines = read_user_text(p, "prompt file").splitlines()
            head = [c.strip() for c in next(csv.reader(lines[:1]), [])]
            fmt = "xstest" if "type" in head else "orbench"
    return {"jsonl": data.read_prompts_jsonl, "xstest": data.read_xstest, "orbench": data.read_orbench}[fmt](p)


def steer_cfg(args, base=None):
    """SteerConfig: the flags given on the command line over `base` (a bank's stored settings) or
    over SteerConfig's defaults; --layers wins over --top-k, and --top-k given alone drops stored layers."""
    from mvp_core.steer.config import SteerConfig, parse_layers
    values = (base or SteerConfig()).model_dump()
    try:
        if parse_layers(args.layers):
            values["layers"] = parse_layers(args.layers)
        elif args.top_k is not None:
            values["layers"] = None
        given = {"top_k": args.top_k, "eta": args.eta, "steps": args.steps, "gate": args.gate,
                 "positions": args.positions, "force_bank": getattr(args, "force_bank", None) or None}
        values.update({k: v for k, v in given.items() if v is not None})
        return SteerConfig.from_values(values)
    except (ValueError, UserError) as e:      # one line naming the setting (DocumentedConfig)
        raise UserError(f"bad steering settings: {str(e).splitlines()[0]}") from None


def _load(args):
    from mvp_core.steer.load import load_decoder
    model, proc, vl = load_decoder(args.model, device=args.device, dtype=args.dtype)
    tok = proc.tokenizer if vl else proc
    if tok.chat_template is None:
        print(f"note: {args.model} has no chat template (a base model?): prompts are used as written",
              file=sys.stderr)
    return model, proc, tok, vl


def _prompts(args):
    prompts = read_prompts(args.prompts, args.format)
    return prompts[: args.limit] if args.limit else prompts


def collect_prompts(args) -> int:
    from mvp_core.steer.collect import collect_states, text_batches
    from mvp_core.steer.config import CollectConfig
    from mvp_core.steer.data import SubstringJudge, balanced_sample, is_bad, label_class
    from mvp_core.steer.evaluate import generate_answers
    from mvp_core.steer.fingerprint import model_fingerprint
    from mvp_core.steer.layers import model_name
    from mvp_core.steer.states import save_states
    prompts = _prompts(args)
    model, _, tok, _ = _load(args)
    judge = SubstringJudge()
    answers = generate_answers(model, tok, [p.text for p in prompts], args.max_new_tokens, args.batch_size,
                               progress=True, desc="answer", enable_thinking=args.enable_thinking)
    classes = [label_class(p.kind, judge(a)) for p, a in zip(prompts, answers)]
    keep = balanced_sample(classes, args.per_class, args.seed)
    texts = [prompts[i].text for i in keep]
    states = collect_states(model, text_batches(tok, texts, CollectConfig(batch_size=args.batch_size,
                                                                             enable_thinking=args.enable_thinking)),
                            total=len(texts), progress=True)
    kept = [classes[i] for i in keep]
    save_states(args.out, states, [is_bad(c) for c in kept], kept, texts, texts, str(args.model),
                {"kinds": [prompts[i].kind for i in keep], "answers": [answers[i] for i in keep]},
                fingerprint=model_fingerprint(model))
    have, took = Counter(classes), Counter(kept)
    print(_table(["class", "good/bad", "answered", "kept"],
                 [[c, "bad" if is_bad(c) else "good", have[c], took[c]] for c in sorted(have)]))
    print(f"{len(texts)} states x {states.shape[1]} layers x {states.shape[2]} written to {args.out} ({model_name(model)})")
    return 0


def _pcfg(args):
    """The puzzle prompt (mvp_core/model/prompt.py) with the thinking switch the command was given."""
    from mvp_core.model.prompt import PromptConfig
    return PromptConfig(enable_thinking=args.enable_thinking)


def _puzzles_and_videollm(args):
    """(records, data directory, model, processor, frame loader) for the puzzle commands; --split is applied by
    load_puzzles (one clear line when the source has no such split)."""
    from app.cli.model import load_puzzles
    from mvp_core.model.rollout import frame_loader
    records, data = load_puzzles(args)
    records = records[: args.limit] if getattr(args, "limit", None) else records
    model, proc, _, vl = _load(args)
    if not vl:
        raise UserError("puzzles need a VideoLLM (a Qwen-VL model directory)")
    return records, data, model, proc, frame_loader(data)


def collect_puzzles(args) -> int:
    from mvp_core.steer.collect import collect_states, puzzle_batches
    from mvp_core.steer.fingerprint import model_fingerprint
    from mvp_core.steer.puzzles import greedy_rows, puzzle_labels, verdict_labels
    from mvp_core.steer.states import save_states
    records, data, model, proc, load = _puzzles_and_videollm(args)
    if args.verdicts:   # the curators' judgement of each puzzle, not a model's answers
        from db.engine import open_db
        from db.runs.steer_labels import curator_verdicts
        with open_db(args.db, data)() as s:
            bad = verdict_labels(curator_verdicts(s, [r["id"] for r in records]))
        source = "curator verdicts"
    elif args.run:
        from db.engine import open_db
        from db.runs.steer_labels import rollout_answers
        with open_db(args.db, data)() as s:
            answers = rollout_answers(s, args.run, args.checkpoint, [r["id"] for r in records])
        bad, source = puzzle_labels(answers, args.reward_threshold), f"run {args.run}"
    else:   # no stored run: answer greedily now
        answers = greedy_rows(model, proc, records, load, args.max_new_tokens, pcfg=_pcfg(args), progress=True)
        bad, source = puzzle_labels(answers, args.reward_threshold), "greedy answers"
    records = [r for r in records if r["id"] in bad]
    states = collect_states(model, puzzle_batches(proc, records, load, _pcfg(args), batch_size=args.batch_size),
                            total=len(records), progress=True)
    labels = [bad[r["id"]] for r in records]
    splits = [r.get("split") for r in records]   # a curated set's own split (by video), when every puzzle has one
    bad_name, good_name = ("rejected", "accepted") if args.verdicts else ("wrong", "right")
    classes = [bad_name if b else good_name for b in labels]
    save_states(args.out, states, labels, classes, [r["id"] for r in records],
                [r["video"]["id"] for r in records], str(args.model),
                {"label_source": source, "splits": splits if all(splits) else None},
                fingerprint=model_fingerprint(model))
    n = Counter(classes)
    print(_table(["label", "puzzles"], [[f"{good_name} (good)", n[good_name]], [f"{bad_name} (bad)", n[bad_name]]]))
    print(f"{len(records)} puzzle states from {source} written to {args.out}")
    return 0


def _steering(args, model, record: bool = False):
    from mvp_core.steer.bank import EnergyBank
    from mvp_core.steer.steer import Steering
    bank = EnergyBank.load(args.bank)
    gate_bank = EnergyBank.load(args.gate_bank) if getattr(args, "gate_bank", None) else None
    cfg = steer_cfg(args, bank.steer_config)
    for b in (bank, gate_bank or bank):   # refused before any answer is generated, not after the unsteered ones
        b.check_model(model, force=cfg.force_bank)
    return Steering(model, bank, cfg, record=record, gate_bank=gate_bank)


def generate_side_by_side(args) -> int:
    from mvp_core.steer.evaluate import generate_answers
    model, _, tok, _ = _load(args)
    st = _steering(args, model, record=True)
    kw = {"enable_thinking": args.enable_thinking}
    plain = generate_answers(model, tok, args.prompt, args.max_new_tokens, args.batch_size, **kw)
    steered = generate_answers(model, tok, args.prompt, args.max_new_tokens, args.batch_size, steering=st, **kw)
    pre = st.prefill_energies()
    for i, p in enumerate(args.prompt):
        print(f"prompt: {p}\n  unsteered: {plain[i]!r}\n  steered:   {steered[i]!r}")
        for li, r in sorted(pre.items()):
            print(f"    layer {li}: energy {r['before'][i]:+.3f} -> {r['after'][i]:+.3f} ({r['steps'][i]} steps)")
    return 0


def eval_prompts(args) -> int:
    from mvp_core.steer.data import SubstringJudge
    from mvp_core.steer.evaluate import generate_answers, refusal_rate
    prompts = _prompts(args)
    model, _, tok, _ = _load(args)
    steering = _steering(args, model)
    judge = SubstringJudge()
    report = {}
    for kind in ("harmless", "harmful"):
        texts = [p.text for p in prompts if p.kind == kind]
        if not texts:
            continue
        a = generate_answers(model, tok, texts, args.max_new_tokens, args.batch_size, progress=True,
                             desc=f"{kind} unsteered", enable_thinking=args.enable_thinking)
        b = generate_answers(model, tok, texts, args.max_new_tokens, args.batch_size, progress=True,
                             desc=f"{kind} steered", steering=steering, enable_thinking=args.enable_thinking)
        report[kind] = {"prompts": len(texts), "refusal_unsteered": refusal_rate(a, judge),
                        "refusal_steered": refusal_rate(b, judge), "answers_changed": sum(x != y for x, y in zip(a, b))}
    rows = []
    for kind, r in report.items():
        name = "compliance" if kind == "harmless" else "refusal"
        f = (lambda v: 1 - v) if kind == "harmless" else (lambda v: v)
        rows.append([kind, r["prompts"], name, f(r["refusal_unsteered"]), f(r["refusal_steered"]), r["answers_changed"]])
    print(_table(["prompts", "n", "rate", "unsteered", "steered", "changed"], rows))
    _write(args, {**report, "layers": _steered_layers(steering)})
    return 0


def eval_puzzles(args) -> int:
    from mvp_core.steer.puzzles import compare, greedy_rows
    records, _, model, proc, load = _puzzles_and_videollm(args)
    steering = _steering(args, model)
    plain = greedy_rows(model, proc, records, load, args.max_new_tokens, pcfg=_pcfg(args), progress=True)
    steered = greedy_rows(model, proc, records, load, args.max_new_tokens, steering=steering, pcfg=_pcfg(args),
                          progress=True)
    rep = compare(plain, steered)
    rows = [[t, rep[t]["unsteered"], rep[t]["steered"], rep[t]["change"],
             f"[{rep[t]['change_ci'][0]:+.3f}, {rep[t]['change_ci'][1]:+.3f}]"] for t in ("exact", "total")]
    print(_table(["term", "unsteered", "steered", "change", "95% CI of change"], rows))
    print(f"{rep['puzzles']} puzzles, {rep['answers_changed']} answers changed by steering")
    _write(args, {**rep, "layers": _steered_layers(steering)})
    return 0


def _steered_layers(steering) -> dict:
    """The steered layers' scores from the bank (balanced accuracy and AUROC; docs/steer.md), printed and
    written with the eval report: how well each layer's energy told good from bad on held-out states."""
    ms = {li: steering.bank.metrics[li] for li in steering.layers}
    print(_table(["steered layer", "val_bal_acc", "test_bal_acc", "test_auroc", "test_acc", "threshold"],
                 [[li, m.val_bal_acc, m.test_bal_acc, m.test_auroc, m.test_acc, m.threshold] for li, m in ms.items()]))
    return {str(li): m.model_dump() for li, m in ms.items()}


def _write(args, report: dict) -> None:
    if args.out:
        Path(args.out).parent.mkdir(parents=True, exist_ok=True)
        Path(args.out).write_text(json.dumps(report, indent=2))

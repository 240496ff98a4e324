"""`mvp steer collect|train|generate|eval`: energy steering from the command line (docs/steer.md).

collect: answer prompts greedily, judge them, label the four classes, sample them balanced and save
the states entering every layer; or, for the VideoLLM, label puzzles from a run's stored answers.
train: one energy model per layer, with the per-layer table. generate: plain vs steered answers.
eval: refusal use (compliance / refusal rates) or puzzle use (exact / reward on a set split)."""
from __future__ import annotations

import sys
from pathlib import Path

from app.cli.args import add_db_args, positive_int
from mvp_core.errors import UserError


def register(sub) -> None:
    p = sub.add_parser("steer", help="energy steering: collect states, train energies, generate, evaluate")
    ssub = p.add_subparsers(dest="steer_command", required=True)

    c = ssub.add_parser("collect", help="answer, judge and label prompts (or puzzles); save layer states")
    _model_args(c)
    _source_args(c)
    c.add_argument("--out", required=True, help="states file to write (.pt)")
    c.add_argument("--per-class", type=positive_int, default=500, help="at most this many per class, sampled (default 500)")
    c.add_argument("--reward-threshold", type=float, default=1.0,
                   help="puzzles: an answer with reward >= this counts as good, like an exact one (default 1.0)")
    c.add_argument("--run", help="puzzles: label from this run's stored answers")
    c.add_argument("--checkpoint", type=int, help="puzzles: the run's checkpoint step (default: base model)")
    c.add_argument("--verdicts", action="store_true",
                   help="puzzles: label from curator verdicts (more accepts than rejects: good; more rejects: "
                        "bad; ties and skips: left out) instead of answers")
    c.set_defaults(func=_collect)

    t = ssub.add_parser("train", help="train one energy model per layer; print val/test balanced accuracy and "
                                      "AUROC")
    t.add_argument("states", help="states file from `mvp steer collect`")
    t.add_argument("--out", required=True, help="energy bank to write (.pt)")
    t.add_argument("--hidden", default="2048,1024,1024,512", help="hidden sizes (default 2048,1024,1024,512)")
    t.add_argument("--epochs", type=int, default=120)
    t.add_argument("--lr", type=float, default=5e-5)
    t.add_argument("--batch-size", type=int, default=64)
    t.add_argument("--tau", type=float, default=0.1)
    t.add_argument("--dropout", type=float, default=0.15)
    t.add_argument("--seed", type=int, default=0)
    t.add_argument("--threads", type=positive_int, help="torch CPU threads")
    t.add_argument("--labels", default="four", choices=["four", "false-refusal"],
                   help="four: all four classes (published); false-refusal: harmless prompts only "
                        "(answered good, refused bad)")
    _steer_args(t)
    t.set_defaults(func=_train)

    g = ssub.add_parser("generate", help="answer prompts with and without steering, side by side")
    _model_args(g)
    g.add_argument("--bank", required=True, help="energy bank from `mvp steer train`")
    g.add_argument("prompt", nargs="+", help="prompt text(s)")
    _steer_args(g)
    g.set_defaults(func=_generate)

    e = ssub.add_parser("eval", help="steered vs unsteered: refusal rates (prompts) or exact/reward (puzzles)")
    _model_args(e)
    _source_args(e)
    e.add_argument("--bank", required=True, help="energy bank from `mvp steer train`")
    e.add_argument("--out", help="JSON report path")
    _steer_args(e)
    e.set_defaults(func=_eval)

    from app.cli.steer_build import add_build_parser
    add_build_parser(ssub, _build)


def _model_args(p) -> None:
    p.add_argument("--model", required=True, help="local model directory (causal LM or Qwen-VL)")
    p.add_argument("--device", default="cpu")
    p.add_argument("--dtype", default="auto")
    p.add_argument("--batch-size", type=positive_int, default=16, help="prompts per forward / generate call")
    p.add_argument("--max-new-tokens", type=positive_int, default=32)
    p.add_argument("--threads", type=positive_int, help="torch CPU threads")
    p.add_argument("--enable-thinking", action="store_true",
                   help="Qwen3-family chat templates: build prompts with thinking on (default off, as in the "
                        "published steering code)")


def _source_args(p) -> None:
    src = p.add_mutually_exclusive_group(required=True)
    src.add_argument("--prompts", help="prompt file: JSONL (prompt, kind) or XSTest / OR-Bench CSV")
    src.add_argument("--set", help="puzzles: curated set name (from the database)")
    src.add_argument("--puzzles", help="puzzles: puzzles.jsonl (frames relative to --data)")
    p.add_argument("--format", default="auto", choices=["auto", "jsonl", "xstest", "orbench"],
                   help="prompt file layout (auto: by extension and columns)")
    p.add_argument("--split", help="puzzles: only this split (train / val / test)")
    p.add_argument("--limit", type=positive_int, help="use at most this many prompts / puzzles")
    p.add_argument("--seed", type=int, default=0)
    add_db_args(p)


def _steer_args(p) -> None:
    # No defaults here: `train` stores what was given over SteerConfig's defaults in the bank, and
    # generate / eval start from the bank's stored settings, so only the flags given override them.
    p.add_argument("--top-k", type=int, help="steer the k best layers (default: the bank's, else 3)")
    p.add_argument("--layers", help="explicit layer indices, e.g. 2,3 (overrides --top-k)")
    p.add_argument("--eta", type=float, help="step size (default: the bank's, else 0.5)")
    p.add_argument("--steps", type=int, help="K gradient steps (default: the bank's, else 5)")
    p.add_argument("--gate", choices=["off", "entry", "while"],
                   help="gate on the threshold (default: the bank's, else off)")
    p.add_argument("--positions", choices=["every", "prompt"],
                   help="every: steer each forward call's last position (published); prompt: the last prompt "
                        "token only (default: the bank's, else every)")
    p.add_argument("--print-config", action="store_true",
                   help="print the resolved settings with documentation and exit")
    if p.prog.split()[-1] != "train":
        p.add_argument("--force-bank", action="store_true",
                       help="apply the bank(s) to this model although they were trained on another (refused "
                            "otherwise; another hidden size or layer count is refused regardless)")
        p.add_argument("--gate-bank", help="gate 'entry': judge rows by this bank (e.g. four-class labels) "
                                           "while --bank gives the direction")


def _print_config(args, energy=None) -> int:
    """--print-config: the settings the command would use, documented, as YAML (like `mvp train`)."""
    from app.cli.steer_run import steer_cfg
    from mvp_core.steer.config import EnergyConfig, SteerConfig
    if energy is not None:
        print("# energy models (EnergyConfig)\n" + EnergyConfig.documented_yaml(energy), end="")
    bank = getattr(args, "bank", None)
    base = None
    if bank and Path(bank).is_file():      # generate / eval: the bank's stored settings under the flags
        from mvp_core.steer.bank import EnergyBank
        base = EnergyBank.load(bank).steer_config
    print("# steering (SteerConfig)\n" + SteerConfig.documented_yaml(steer_cfg(args, base)), end="")
    return 0


def _threads(args) -> None:
    if getattr(args, "threads", None):
        import torch
        torch.set_num_threads(args.threads)


def _collect(args) -> int:
    from app.cli.steer_run import collect_prompts, collect_puzzles
    _threads(args)
    return collect_puzzles(args) if (args.set or args.puzzles) else collect_prompts(args)


def _train(args) -> int:
    from app.cli.steer_run import _table, steer_cfg
    from mvp_core.steer.config import EnergyConfig
    from mvp_core.steer.states import load_states
    from mvp_core.steer.train import train_bank
    try:
        cfg = EnergyConfig.from_values({"hidden": [int(x) for x in args.hidden.split(",")], "epochs": args.epochs,
                                        "lr": args.lr, "batch_size": args.batch_size, "tau": args.tau,
                                        "dropout": args.dropout, "seed": args.seed})
    except (ValueError, UserError) as e:      # one line naming the setting (DocumentedConfig)
        raise UserError(f"bad energy settings: {str(e).splitlines()[0]}") from None
    if args.print_config:
        return _print_config(args, cfg)
    _threads(args)
    blob = load_states(args.states)
    if args.labels == "false-refusal":
        blob = _harmless_only(blob)
    # a set's own splits only when the states span them; states of one split (the train split, as
    # `mvp steer build` collects by default) draw validation and test from it, by group (draw_splits)
    bank = train_bank(blob["states"], blob["bad"].numpy(), cfg, groups=blob["groups"], model_name=blob["model_name"],
                      progress=True, split_names=(blob.get("extra") or {}).get("splits"),
                      fingerprint=blob.get("fingerprint"))
    bank.steer_config = steer_cfg(args)
    bank.save(args.out)
    rank = {li: i + 1 for i, li in enumerate(bank.ranking())}
    rows = [[li, rank[li], m.val_bal_acc, m.val_auroc, m.test_bal_acc, m.test_auroc, m.val_acc, m.test_acc,
             m.val_acc_e0, m.threshold, m.best_epoch] for li, m in sorted(bank.metrics.items())]
    print(_table(["layer", "rank", "val_bal_acc", "val_auroc", "test_bal_acc", "test_auroc", "val_acc", "test_acc",
                  "val_acc@E=0", "threshold", "epoch"], rows))
    print("rank: by validation balanced accuracy (ties: validation AUROC); the test columns are not used to choose")
    if bank.fingerprint is None:
        print(f"note: {args.states} records no model fingerprint (an older `mvp steer collect`): the bank will "
              "steer only with --force-bank", file=sys.stderr)
    print(f"energy bank for {bank.model_name} ({bank.num_layers} layers x {bank.hidden_size}) written to {args.out}; "
          f"steers layers {bank.chosen_layers()}")
    return 0


def _build(args) -> int:
    import argparse

    from app.cli.steer_build import build
    parser = argparse.ArgumentParser(prog="mvp")
    register(parser.add_subparsers(dest="command"))
    return build(args, parser, _collect, _train)


def _harmless_only(blob: dict) -> dict:
    keep = [i for i, c in enumerate(blob["classes"]) if c.startswith("harmless")]
    if not keep:
        raise UserError("--labels false-refusal needs harmless prompts in the states file")
    return {**blob, "states": blob["states"][keep], "bad": blob["bad"][keep],
            "classes": [blob["classes"][i] for i in keep], "groups": [blob["groups"][i] for i in keep]}


def _generate(args) -> int:
    from app.cli.steer_run import generate_side_by_side
    if args.print_config:
        return _print_config(args)
    _threads(args)
    return generate_side_by_side(args)


def _eval(args) -> int:
    from app.cli.steer_run import eval_prompts, eval_puzzles
    if args.print_config:
        return _print_config(args)
    _threads(args)
    return eval_puzzles(args) if (args.set or args.puzzles) else eval_prompts(args)

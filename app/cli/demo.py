"""`mvp demo --data DIR`: the serving half of the README's first command.

Given puzzles in DIR (made by `mvp synth ... --data DIR`), it makes a demo login (an admin, so every
page is visible; the password is printed), stores G answers per puzzle from a tiny *random-weight*
Qwen2.5-VL (so the rollouts page has something to show; the page marks them as noise), trains a
small model on generated videos on the first run (app/cli/demo_trained.py: GRPO from the shipped SFT
warm start, a couple of minutes, reused afterwards) and stores its answers beside the warm start's and
the untrained model's, and serves the app. Re-running it
keeps the answers already stored and gives the demo user a new password."""
from __future__ import annotations

from app.cli.args import add_db_args, positive_int

DEMO_RUN = "demo-tiny-random"


def register(sub) -> None:
    p = sub.add_parser("demo", help="demo login + tiny-model rollouts over existing puzzles, then serve")
    add_db_args(p)
    p.add_argument("--user", default="demo", help="demo user name (role admin)")
    p.add_argument("--password", default=None, help="demo password (default: a random one, printed)")
    p.add_argument("-G", "--num-generations", type=int, default=4, help="answers per puzzle")
    p.add_argument("--limit", type=positive_int, default=12, help="puzzles to roll out (the tiny model is slow on a CPU)")
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=int, default=7860)
    p.add_argument("--no-serve", action="store_true", help="prepare only (for scripts and CI)")
    # a cap, not a target: the demo's GRPO_STEPS (app/cli/demo_trained.py) usually end first (docs/BENCHMARKS.md)
    p.add_argument("--train-minutes", type=float, default=3.0,
                   help="first run only: at most this many minutes of GRPO for the demo's trained model (default 3)")
    p.add_argument("--no-train", action="store_true", help="skip the trained model (random-weight answers only)")
    p.set_defaults(func=handler)


def _interrupt_on_sigterm() -> None:
    """SIGTERM ends the demo like Ctrl-C: `interrupted`, exit 130, children stopped (Python's default
    would die at once and leave a rollout or the trainer running on the data directory)."""
    import signal

    def stop(signum, frame):
        raise KeyboardInterrupt
    signal.signal(signal.SIGTERM, stop)


def handler(args) -> int:
    import subprocess
    import sys

    from sqlalchemy import func, select

    from app.cli.demo_trained import build_beside, run_done
    from db.engine import data_dir, database_url, open_db
    from db.models import Puzzle
    from db.users.accounts import add_user, get_user, set_password
    from mvp_core.errors import UserError
    _interrupt_on_sigterm()
    if not args.no_serve:       # before minutes of work, not after
        from app.cli.serve import check_port
        check_port(args.host, args.port)
    data = data_dir(args.data)
    url = database_url(args.db, data)
    Session = open_db(url, data)
    with Session() as s:
        n = s.scalar(select(func.count()).select_from(Puzzle)) or 0
        if n == 0:
            raise UserError(f"no puzzles in {url}; run `mvp synth VIDEO_DIR --data {data}` first")
        if get_user(s, args.user) is None:
            _, password = add_user(s, args.user, "admin", args.password)
        else:
            import secrets
            password = args.password or secrets.token_urlsafe(9)
            set_password(s, args.user, password)
        s.commit()
    if not run_done(Session, DEMO_RUN):
        model = data / "models" / "tiny-random-qwen25vl"
        if not (model / "config.json").exists():
            from mvp_core.model.tiny import build_tiny_model
            print(f"building a tiny random-weight Qwen2.5-VL in {model}", flush=True)
            build_beside(model, build_tiny_model)
        jsonl = data / "puzzles.jsonl"
        if not jsonl.exists():
            raise UserError(f"{jsonl} is missing; rerun `mvp synth ... --data {data}`")
        print(f"storing {args.num_generations} answers per puzzle from the random-weight model "
              f"(up to {args.limit} puzzles)", flush=True)
        cmd = [sys.executable, "-m", "app.cli", "rollout", "--model", str(model), "--puzzles", str(jsonl),
               "--data", str(data), "--db", url, "-G", str(args.num_generations), "--limit", str(args.limit),
               "--name", DEMO_RUN, "--threads", "1"]
        if subprocess.run(cmd).returncode != 0:
            raise UserError("storing the demo rollouts failed (see above)")
    if not args.no_train:
        from app.cli.demo_trained import store_answers
        store_answers(Session, data, url, args.train_minutes, args.num_generations, args.limit)
    from app.cli.demo_summary import summary
    from app.cli.demo_trained import BASE_RUN, GRPO_RUN, OWN_SHAPE_RUN, SFT_RUN
    print(summary(Session, data, [
        (DEMO_RUN, "tiny random model, real footage"),
        (BASE_RUN, "untrained base (clock videos, 5 options)"),
        (OWN_SHAPE_RUN, "shipped SFT warm start, on its own 4-option shape"),
        (SFT_RUN, "shipped SFT warm start, on 5 options (a shape it never trained on)"),
        (GRPO_RUN, "GRPO from the warm start, on 5 options (the shape it trained on)"),
    ], [data / "generated-videos", data / "generated-videos-own-shape"]), flush=True)
    print(f"\ndemo login: user {args.user!r}, password {password!r}  (role admin)", flush=True)
    if args.no_serve:
        return 0
    from app.cli.serve import handler as serve
    args.data, args.db = str(data), url
    return serve(args)

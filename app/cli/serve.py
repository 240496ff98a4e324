"""`mvp serve`: the web app (curate, rollouts, stats, train, admin) on HOST:PORT."""
from __future__ import annotations

from app.cli.args import add_db_args


def register(sub) -> None:
    p = sub.add_parser("serve", help="run the web app")
    add_db_args(p)
    p.add_argument("--host", default="127.0.0.1", help="interface to listen on (0.0.0.0 in a container)")
    p.add_argument("--port", type=int, default=7860)
    p.set_defaults(func=handler)


def handler(args) -> int:
    from app.web.server import serve_forever
    from db.engine import data_dir
    from mvp_core.errors import UserError
    if not 0 < args.port < 65536:
        raise UserError(f"--port must be 1-65535, not {args.port}")
    data = data_dir(args.data)
    print(f"MVP Studio: http://{args.host}:{args.port}/  (data: {data})", flush=True)
    serve_forever(data, args.db, host=args.host, port=args.port)
    return 0

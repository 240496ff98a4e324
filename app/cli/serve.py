"""`mvp serve`: the web app (curate, rollouts, stats, train, admin) on HOST:PORT."""
from __future__ import annotations

import argparse
import os

from app.cli.args import add_db_args

_TRUE, _FALSE = ("1", "true", "yes", "on"), ("0", "false", "no", "off")


def register(sub) -> None:
    p = sub.add_parser("serve", help="run the web app")
    add_db_args(p)
    p.add_argument("--host", default="127.0.0.1", help="interface to listen on (0.0.0.0 in a container)")
    p.add_argument("--port", type=int, default=7860)
    p.add_argument("--secure-cookies", action=argparse.BooleanOptionalAction, default=None,
                   help="mark the session cookie Secure (sent over HTTPS only). Default: MVP_SECURE_COOKIES "
                        "if set, else Secure exactly when the request came over HTTPS (a proxy's "
                        "X-Forwarded-Proto counts when it is in FORWARDED_ALLOW_IPS)")
    p.set_defaults(func=handler)


def secure_cookies_setting(flag: bool | None) -> bool | None:
    """The flag, else MVP_SECURE_COOKIES, else None (decide per request by its scheme)."""
    from mvp_core.errors import UserError
    if flag is not None:
        return flag
    env = os.environ.get("MVP_SECURE_COOKIES", "").strip().lower()
    if not env or env == "auto":
        return None
    if env in _TRUE or env in _FALSE:
        return env in _TRUE
    raise UserError(f"MVP_SECURE_COOKIES must be 1/0, true/false or auto, not {env!r}")


def check_port(host: str, port: int) -> None:
    """A UserError unless HOST:PORT can be listened on now (uvicorn's own failure comes after the app
    is built, as a log line and a bare exit 1)."""
    import socket

    from mvp_core.errors import UserError
    if not 0 < port < 65536:
        raise UserError(f"--port must be 1-65535, not {port}")
    try:
        family, kind, proto, _, addr = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)[0]
    except socket.gaierror as e:
        raise UserError(f"cannot listen on host {host!r}: {e.strerror}") from None
    with socket.socket(family, kind, proto) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)   # as uvicorn binds
        try:
            sock.bind(addr)
        except OSError as e:
            raise UserError(f"cannot listen on {host}:{port} ({e.strerror}); stop what uses it or pick "
                            "another port: --port N (scripts/demo.sh: PORT=N)") from None


def handler(args) -> int:
    from app.web.server import serve_forever
    from app.web.settings import ServeSettings
    from db.engine import data_dir
    check_port(args.host, args.port)
    settings = ServeSettings.from_env(args.host)      # a bad MVP_TRUSTED_PROXIES/MVP_ALLOWED_HOSTS: one line
    # `mvp demo` hands its own args over: it has no --secure-cookies flag (MVP_SECURE_COOKIES still applies)
    secure = secure_cookies_setting(getattr(args, "secure_cookies", None))
    data = data_dir(args.data)
    mode = {True: "always", False: "never", None: "over HTTPS"}[secure]
    print(f"MVP Studio: http://{args.host}:{args.port}/  (data: {data}; Secure cookies: {mode})", flush=True)
    serve_forever(data, args.db, host=args.host, port=args.port, secure_cookies=secure, settings=settings)
    return 0


if __name__ == "__main__":   # scripts/demo.sh: `python -m app.cli.serve HOST PORT` checks the port before the long work
    import sys

    from mvp_core.errors import UserError
    try:
        check_port(sys.argv[1], int(sys.argv[2]))
    except (UserError, ValueError) as e:
        print(f"error: {e}", file=sys.stderr)
        sys.exit(2)

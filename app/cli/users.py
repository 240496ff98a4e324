"""`mvp users add|list|passwd|role|unlock|disable|enable|delete`: accounts for the web app. Names and
passwords are checked by `db.users.accounts` (the one validation every path uses); a password or role
change, disabling or deleting ends the user's sessions."""
from __future__ import annotations

import getpass
import os

from app.cli.args import add_db_args
from db.models.curation import ROLES


def register(sub) -> None:
    p = sub.add_parser("users", help="manage users (curator, researcher, admin)")
    usub = p.add_subparsers(dest="users_command", required=True)
    q = usub.add_parser("add", help="add a user; prints a generated password when none is given")
    q.add_argument("name")
    q.add_argument("--role", default="curator", choices=ROLES)
    q.add_argument("--password", help="the password (default: MVP_PASSWORD, else a random one, printed)")
    add_db_args(q)
    q.set_defaults(func=_add)
    q = usub.add_parser("list", help="list users")
    add_db_args(q)
    q.set_defaults(func=_list)
    q = usub.add_parser("passwd", help="set a user's password (asks for it unless --password)")
    q.add_argument("name")
    q.add_argument("--password")
    add_db_args(q)
    q.set_defaults(func=_passwd)
    q = usub.add_parser("role", help="change a user's role (ends their web sessions)")
    q.add_argument("name")
    q.add_argument("role", choices=ROLES)
    add_db_args(q)
    q.set_defaults(func=_role)
    q = usub.add_parser("unlock", help="forget a user's failed logins (lifts the login throttle on the name)")
    q.add_argument("name")
    add_db_args(q)
    q.set_defaults(func=_unlock)
    for cmd, text in (("disable", "disable an account: no login, their web sessions end at once (work is kept)"),
                      ("enable", "enable a disabled account again"),
                      ("delete", "delete an account that has no stored work (else: disable it)")):
        q = usub.add_parser(cmd, help=text)
        q.add_argument("name")
        add_db_args(q)
        q.set_defaults(func=_delete if cmd == "delete" else _disable)


def _add(args) -> int:
    from db.engine import open_db
    from db.users.accounts import add_user
    given = args.password or os.environ.get("MVP_PASSWORD")
    with open_db(args.db, args.data)() as s:
        user, pw = add_user(s, args.name, args.role, given)
        s.commit()
    print(f"added {user.name} ({user.role})" + ("" if given else f"; password: {pw}"))
    return 0


def _list(args) -> int:
    from db.engine import open_db
    from db.users.accounts import list_users
    with open_db(args.db, args.data)() as s:
        for u in list_users(s):
            print(f"{u['name']}\t{u['role']}\t{u['created_at']:%Y-%m-%d}" + ("\tdisabled" if u["disabled"] else ""))
    return 0


def _passwd(args) -> int:
    from db.engine import open_db
    from db.users.accounts import set_password
    pw = args.password or getpass.getpass(f"new password for {args.name}: ")
    with open_db(args.db, args.data)() as s:
        set_password(s, args.name, pw)
        s.commit()
    print(f"password changed for {args.name} (their web sessions are ended)")
    return 0


def _role(args) -> int:
    from db.engine import open_db
    from db.users.accounts import set_role
    with open_db(args.db, args.data)() as s:
        set_role(s, args.name, args.role)
        s.commit()
    print(f"{args.name} is now {args.role} (their web sessions are ended)")
    return 0


def _unlock(args) -> int:
    from db.engine import open_db
    from db.users.accounts import get_user
    from db.users.sessions import unlock
    from mvp_core.errors import UserError
    with open_db(args.db, args.data)() as s:
        if get_user(s, args.name) is None:
            raise UserError(f"no such user: {args.name!r}")
        n = unlock(s, args.name)
        s.commit()
    print(f"{args.name} unlocked ({n} failed login{'s' if n != 1 else ''} forgotten)")
    return 0


def _disable(args) -> int:
    from db.engine import open_db
    from db.users.accounts import set_disabled
    off = args.users_command == "disable"
    with open_db(args.db, args.data)() as s:
        changed = set_disabled(s, args.name, off)
        s.commit()
    state = "disabled (their web sessions are ended)" if off else "enabled"
    print(f"{args.name} is {'now' if changed else 'already'} {state}")
    return 0


def _delete(args) -> int:
    from db.engine import open_db
    from db.users.accounts import delete_user
    with open_db(args.db, args.data)() as s:
        delete_user(s, args.name)
        s.commit()
    print(f"deleted {args.name}")
    return 0

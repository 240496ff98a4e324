"""Disabling, enabling and deleting an account (db/users/accounts.py; `mvp users disable|enable|delete`;
the Admin page's buttons, with its Unlock): a disabled account cannot log in and its sessions end at
once; its work stays attributed; an account with stored work is never deleted (one line: disable it);
the last enabled admin can be neither. Store tests on SQLite and PostgreSQL; the page in Chromium."""
from __future__ import annotations

import uuid

import pytest
from fixtures_web import login, shot
from testkit.cli import run_mvp
from testkit.web import dataframe_rows

from mvp_core.errors import UserError

PW = "a-long-enough-password"


def _add(Session, name: str, role: str = "curator") -> int:
    from db.users.accounts import add_user
    with Session() as s:
        u, _ = add_user(s, name, role, PW)
        s.commit()
        return u.id


def _session_for(Session, uid: int) -> str:
    from db.users.sessions import create_session
    with Session() as s:
        return create_session(s, uid, 3600)


def _who(Session, token: str):
    from db.users.sessions import session_user
    with Session() as s:
        return session_user(s, token)


def test_disable_ends_sessions_and_login_enable_restores(store_db):
    from db.users.accounts import authenticate, list_users, set_disabled
    S = store_db.Session
    uid = _add(S, "dora")
    token = _session_for(S, uid)
    assert _who(S, token).name == "dora"
    with S() as s:
        assert set_disabled(s, "dora", True) is True
        s.commit()
    assert _who(S, token) is None                                  # ended at once
    with S() as s:
        assert authenticate(s, "dora", PW) is None                 # and no new login
        assert [u["disabled"] for u in list_users(s) if u["name"] == "dora"] == [True]
        assert set_disabled(s, "dora", True) is False              # already
        set_disabled(s, "dora", False)
        s.commit()
    with S() as s:
        assert authenticate(s, "dora", PW) == (uid, "dora")


def test_delete_keeps_work_and_the_last_admin(store_db):
    from db.models.curation import PuzzleVerdict
    from db.review import submit_verdict
    from db.users.accounts import delete_user, get_user, set_disabled
    S = store_db.Session
    worker, idle, boss = _add(S, "worker"), _add(S, "idle"), _add(S, "boss", "admin")
    _session_for(S, idle)
    with S() as s:
        submit_verdict(s, worker, store_db.records[0]["id"], "accept", seconds=3.0)
        s.commit()
    with S() as s, pytest.raises(UserError, match=r"worker has stored work \(1 verdicts.*disable the account"):
        delete_user(s, "worker")
    with S() as s, pytest.raises(UserError, match="only enabled admin"):
        set_disabled(s, "boss", True)
    with S() as s, pytest.raises(UserError, match="only enabled admin"):
        delete_user(s, "boss")
    with S() as s, pytest.raises(UserError, match="no user named 'ghost'"):
        delete_user(s, "ghost")
    with S() as s:
        delete_user(s, "idle")
        s.commit()
    with S() as s:
        assert get_user(s, "idle") is None
        assert get_user(s, "worker") is not None                    # refused: nothing changed
        assert s.query(PuzzleVerdict).filter_by(user_id=worker).count() == 1


def _users_cli(kind: str, capsys):
    """`mvp users ...` as (returncode, stdout, stderr): on SQLite as its own process (the real command line:
    entry point, exit code, stderr), on PostgreSQL through the same app.cli main in this process (the
    engine is what differs; an interpreter start per command costs more than the command)."""
    import subprocess

    from app.cli.main import main

    def run(*argv):
        if kind == "sqlite":
            return run_mvp("users", *argv, check=False)
        capsys.readouterr()
        rc = main(["users", *map(str, argv)])
        out = capsys.readouterr()
        return subprocess.CompletedProcess(argv, rc, out.out, out.err)
    return run


@pytest.mark.slow
def test_cli_disable_enable_delete(empty_store_any, tmp_path, capsys):
    S, url = empty_store_any.Session, empty_store_any.url
    users = _users_cli(empty_store_any.kind, capsys)
    _add(S, "root", "admin")
    uid = _add(S, "cli-user")
    token = _session_for(S, uid)
    db = ["--db", url, "--data", tmp_path / "data"]

    def ok(*argv) -> str:
        r = users(*argv, *db)
        assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-2000:]
        return r.stdout
    out = ok("disable", "cli-user")
    assert "cli-user is now disabled" in out and _who(S, token) is None
    assert "disabled" in ok("list").split("cli-user", 1)[1].splitlines()[0]
    assert "cli-user is now enabled" in ok("enable", "cli-user")
    r = users("disable", "root", *db)
    assert r.returncode != 0 and "only enabled admin" in r.stderr and "Traceback" not in r.stderr
    assert "deleted cli-user" in ok("delete", "cli-user")
    r = users("delete", "cli-user", *db)
    assert r.returncode != 0 and len(r.stderr.strip().splitlines()) == 1 and "no user named" in r.stderr


@pytest.mark.browser
@pytest.mark.parametrize("width", [1400, 390])
def test_admin_page_disables_enables_unlocks_and_deletes(browser, web_app, width):
    from db.users.sessions import count_attempt
    from db.users.accounts import get_user
    from app.web.auth import throttle_keys
    name = f"temp{uuid.uuid4().hex[:6]}"
    _add(web_app.Session, name)
    with web_app.Session() as s:                                   # a failed guess to unlock
        count_attempt(s, throttle_keys(name, "10.1.2.3"), 60.0)
    victim_ctx, victim = login(browser, web_app, name, PW, path="/curate/")
    ctx, page = login(browser, web_app, "ada", path="/admin/")
    try:
        page.set_viewport_size({"width": width, "height": 900})
        victim.wait_for_selector("#mvp-stage")
        page.wait_for_selector("#admin-add")

        def act(button: str, expect: str) -> None:
            page.fill("#admin-name textarea", name)
            page.click(button)
            page.wait_for_function(f"(document.querySelector('#admin-msg') || {{}}).innerText?.includes({expect!r})")

        act("#admin-disable", f"{name} is now disabled")
        with web_app.Session() as s:
            assert get_user(s, name).disabled
        rows = page.locator(dataframe_rows("admin-users"), has_text=name)     # newest first: drawn
        row = rows.first.inner_text().split()
        assert row[:3] == [name, "curator", "disabled"], row
        shot(page, f"users_admin_disabled_{width}")
        victim.reload()                                            # the session ended at once
        victim.wait_for_url(lambda u: "/login?next=" in u and "curate" in u)
        act("#admin-enable", f"{name} is now enabled")
        act("#admin-unlock", "1 failed login forgotten")
        page.fill("#admin-name textarea", "ada")
        page.click("#admin-delete")
        page.wait_for_selector("#admin-msg .mvp-msg-error")
        assert "your own account" in page.inner_text("#admin-msg")
        act("#admin-delete", f"deleted {name}")
        with web_app.Session() as s:
            assert get_user(s, name) is None
    finally:
        ctx.close()
        victim_ctx.close()

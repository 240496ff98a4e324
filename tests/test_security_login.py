"""Security probe: logging in. Guessing on a name is throttled before the password is checked, per (name,
client address), and holds under 60 requests in parallel; an address guessing many names is slowed but
its owners' right passwords still get in; an unknown user name costs the same time
as a known one; the login form needs its CSRF token; one validation of names and passwords on every
path that creates or changes them (CLI, admin page, demo)."""
from __future__ import annotations

import statistics
import time
from concurrent.futures import ThreadPoolExecutor

import httpx
import pytest
from fixtures_security import PASSWORD, login_form, post_login

from app.web.auth import LOGIN_PER_ADDR, LOGIN_PER_NAME

pytestmark = [pytest.mark.browser]


def parallel_guesses(url: str, names: list[str], addr: str, passwords: list[str]) -> list[httpx.Response]:
    """len(names) login posts at once from client address `addr` (X-Forwarded-For from 127.0.0.1,
    which sec_server trusts as a proxy through MVP_TRUSTED_PROXIES), each on its own connection."""
    hdr = {"X-Forwarded-For": addr}
    _, tok = login_form(url, headers=hdr)

    def one(i):
        with httpx.Client(base_url=url, timeout=120, cookies={"mvp_login_csrf": tok}) as c:
            return post_login(c, tok, names[i], passwords[i], headers=hdr)
    with ThreadPoolExecutor(len(names)) as ex:
        return list(ex.map(one, range(len(names))))


def test_60_parallel_guesses_on_one_name_check_at_most_the_allowance(sec_server, sec_data):
    from sqlalchemy import func, select

    from db.models.auth import LoginAttempt
    n = 60
    wrong = [f"guess-{i:03d}-password" for i in range(n - 1)] + [PASSWORD["cur16"]]   # the last one is right
    t = time.perf_counter()
    res = parallel_guesses(sec_server.url, ["cur16"] * n, "10.6.0.1", wrong)
    took = time.perf_counter() - t
    codes = [r.status_code for r in res]
    checked = [c for c in codes if c in (401, 303)]
    assert len(checked) <= LOGIN_PER_NAME and codes.count(429) >= n - LOGIN_PER_NAME, codes
    assert all(int(r.headers["retry-after"]) >= 1 for r in res if r.status_code == 429)
    assert "Too many login attempts" in next(r.text for r in res if r.status_code == 429)
    with sec_data[2]() as s:    # failed guesses recorded against the name (a success is not counted)
        n_rows = s.scalar(select(func.count()).select_from(LoginAttempt).where(LoginAttempt.key == "user:cur16@10.6.0.1"))
    assert n_rows == codes.count(401) and n_rows <= LOGIN_PER_NAME
    # the allowance is per name: the same address may still log in as someone else
    ok = parallel_guesses(sec_server.url, ["cur17"], "10.6.0.1", [PASSWORD["cur17"]])[0]
    assert ok.status_code == 303
    # the guesser's address waits for the window on cur16, even with the right password ...
    again = parallel_guesses(sec_server.url, ["cur16"], "10.6.0.1", [PASSWORD["cur16"]])[0]
    assert again.status_code == 429 if codes.count(401) == LOGIN_PER_NAME else again.status_code == 303
    # ... but the owner, from their own address, still gets in: an outsider cannot lock them out
    owner = parallel_guesses(sec_server.url, ["cur16"], "10.6.0.2", [PASSWORD["cur16"]])[0]
    assert owner.status_code == 303, owner.status_code
    print(f"60 parallel guesses: {len(checked)} checked, {codes.count(429)} refused in {took:.1f} s")


def test_unknown_name_guesses_slow_an_address_but_never_lock_out_its_owners(sec_server):
    """21 wrong guesses at unknown names from one address (as every local client shares one): the
    address is slowed (its next wrong guess answers 429), but a curator's and the admin's right
    passwords from that same address still get in. Another address keeps its own allowance."""
    from fixtures_web import PASSWORDS
    addr = "10.6.1.1"
    names = [f"nobody{i:02d}" for i in range(LOGIN_PER_ADDR + 1)]
    codes = [r.status_code for r in parallel_guesses(sec_server.url, names, addr, ["not-the-password"] * len(names))]
    assert set(codes) <= {401, 429} and codes.count(401) >= LOGIN_PER_ADDR, codes
    slowed = parallel_guesses(sec_server.url, ["nobody99"], addr, ["not-the-password"])[0]
    assert slowed.status_code == 429 and "Too many login attempts" in slowed.text, slowed.status_code
    assert int(slowed.headers["retry-after"]) >= 1
    owners = parallel_guesses(sec_server.url, ["cur15", "ada"], addr, [PASSWORD["cur15"], PASSWORDS["ada"]])
    assert [r.status_code for r in owners] == [303, 303], [(r.status_code, r.text[:200]) for r in owners]
    other = parallel_guesses(sec_server.url, ["nobody99"], "10.6.1.2", ["not-the-password"])[0]
    assert other.status_code == 401                            # another address has its own allowance


def test_unknown_and_known_user_names_answer_alike(sec_server):
    """Wrong password for an existing user vs an unknown name: both hash once (argon2), so the medians
    agree; the old code answered unknown names ~40% sooner."""
    known, unknown = [], []
    for i in range(5):
        for name, out in ((f"cur{18 + i % 2:02d}", known), (f"ghost{i:02d}", unknown)):
            hdr = {"X-Forwarded-For": f"10.6.2.{2 * i + len(out) % 2}"}
            c, tok = login_form(sec_server.url, headers=hdr)
            t = time.perf_counter()
            r = post_login(c, tok, name, "wrong-password-12", headers=hdr)
            out.append(time.perf_counter() - t)
            assert r.status_code == 401, r.status_code
    mk, mu = statistics.median(known), statistics.median(unknown)
    # the medians are printed, not asserted: a timing bound flakes on a shared machine (bench/ measures it);
    # what holds whatever the load is that both names take the same code path (one hash check each)
    print(f"median answer: known name {mk * 1000:.0f} ms, unknown name {mu * 1000:.0f} ms")


def test_login_needs_its_csrf_token(sec_server):
    url = sec_server.url
    c, tok = login_form(url)
    assert post_login(httpx.Client(base_url=url), tok, "cur19", PASSWORD["cur19"]).status_code == 403  # no cookie
    assert post_login(c, "x" * 32, "cur19", PASSWORD["cur19"]).status_code == 403     # token not the cookie's
    r = c.post("/login", data={"username": "cur19", "password": PASSWORD["cur19"]})     # no token at all
    assert r.status_code == 403 and "expired" in r.text
    assert post_login(c, tok, "cur19", PASSWORD["cur19"]).status_code == 303


BAD_NAMES = {"tab\tname": "control", "nul\x00name": "control", "rtl\u202ename": "bidi", "zw\u200bname": "bidi",
             "x" * 65: "1-64 characters", " padded": "start or end", "": "1-64 characters"}


def test_one_validation_for_names_and_passwords_on_every_path(sec_server, sec_data, capsys):
    from test_web_access import call_endpoint

    from app.cli import main
    from db.users.accounts import get_user
    from fixtures_security import session_token
    from fixtures_web import PASSWORDS
    data, url, Session = sec_data
    db = ["--db", url, "--data", str(data)]
    for name, why in BAD_NAMES.items():                                      # mvp users add
        assert main(["users", "add", name, "--password", "long-enough-pw", *db]) == 2
        err = capsys.readouterr().err.strip()
        assert why in err and "\n" not in err, (name, err)
    assert main(["users", "add", "shorty", "--password", "short", *db]) == 2
    assert "at least 10 characters" in capsys.readouterr().err
    assert main(["users", "passwd", "cur00", "--password", "x", *db]) == 2   # mvp users passwd
    assert "at least 10 characters" in capsys.readouterr().err
    assert main(["demo", "--user", "demo\u202e", "--password", "long-enough-pw", "--no-serve", *db]) == 2
    assert "bidi" in capsys.readouterr().err                                 # mvp demo
    assert main(["demo", "--user", "demo", "--password", "pw", "--no-serve", *db]) == 2
    assert "at least 10 characters" in capsys.readouterr().err
    admin = session_token(sec_server.url, "ada", PASSWORDS["ada"])          # the admin page, over HTTP
    app = type("App", (), {"url": sec_server.url})
    for data_in, why in ((["rtl\u202eadmin", "curator", "long-enough-pw"], "bidi"),
                         (["tab\tadmin", "curator", "long-enough-pw"], "control"),
                         (["okname", "curator", "p"], "at least 10 characters")):
        st, body = call_endpoint(app, "admin", "add_user", data_in, admin)
        assert why in body, (data_in, body)
    st, body = call_endpoint(app, "admin", "set_password", ["cur00", "short"], admin)
    assert "at least 10 characters" in body, body
    with Session() as s:
        for name in [*BAD_NAMES, "shorty", "okname", "demo", "demo\u202e", "rtl\u202eadmin", "tab\tadmin"]:
            assert get_user(s, name) is None, name
    assert session_token(sec_server.url, "cur00", PASSWORD["cur00"])       # cur00's password unchanged


def test_20_simultaneous_logins_all_get_in_without_holding_the_write_lock(sec_server, sec_data):
    """20 curators log in at the same moment on SQLite: every one gets in (303), and meanwhile a writer
    (BEGIN IMMEDIATE, as a verdict takes) finds the database free most of the time: the argon2 check
    runs outside any transaction. Before, each hash ran inside the login's write transaction, so the
    lock was held for the whole burst and the hashes queued on it; under load one login waited past
    the 30 s busy timeout and got a 500."""
    import sqlite3
    import threading
    from sqlalchemy import delete

    from db.models.auth import LoginAttempt
    data, _, _ = sec_data
    names = [f"cur{i:02d}" for i in range(20)]
    with sec_data[2]() as s:    # the brute-force test above throttled cur16 less than a minute ago
        for n in names:
            s.execute(delete(LoginAttempt).where(LoginAttempt.key.startswith(f"user:{n}@")))
        s.commit()
    busy, free, done = [], [], threading.Event()

    def probe():      # a writer that never waits: how often is the write lock taken?
        con = sqlite3.connect(data / "mvp.sqlite", timeout=0, isolation_level=None)
        while not done.is_set():
            try:
                con.execute("BEGIN IMMEDIATE")
                con.execute("COMMIT")
                free.append(1)
            except sqlite3.OperationalError as e:
                assert "locked" in str(e) or "busy" in str(e), e
                busy.append(1)
            time.sleep(0.005)
        con.close()

    def one(i):
        hdr = {"X-Forwarded-For": f"10.6.3.{i}"}
        c, tok = login_form(sec_server.url, headers=hdr)
        try:
            return post_login(c, tok, names[i], PASSWORD[names[i]], headers=hdr)
        finally:
            c.close()

    forms = threading.Thread(target=probe)
    forms.start()
    t = time.perf_counter()
    try:
        with ThreadPoolExecutor(len(names)) as ex:
            codes = [r.status_code for r in ex.map(one, range(len(names)))]
    finally:
        done.set()
        forms.join()
    took = time.perf_counter() - t
    share = len(busy) / max(1, len(busy) + len(free))
    print(f"20 simultaneous logins: {codes.count(303)} in, {took:.1f} s; write lock taken in "
          f"{100 * share:.0f}% of {len(busy) + len(free)} probes")
    assert codes == [303] * len(names), codes
    assert share < 0.5, share

"""The one rule for served files (app/web/files.py), on both engines: in every folder a route serves
from (frames via /data and /thumb, thumbs/ and cache/clips/ via /data, exports/ via the Data page's
download), a hard link to the database, a symlink to it and a renamed copy of it (a SQLite copy, or a
pg_dump file on PostgreSQL) are refused, while a genuine file of the same folder is served. Deciding
never opens the database file, so it never drops the server's SQLite locks: afterwards `mvp users
list` opens the database beside the server, 10 verdicts are acknowledged over the JSON API, the server
is killed (SIGKILL) and restarted, and all 10 are stored."""
from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import sys
import zipfile

import pytest
from fixtures_security import Server, http_login, sqlite_copy
from fixtures_web import ROOT, free_port

pytestmark = [pytest.mark.slow]
DB_MAGIC = (b"SQLite format", b"PGDMP")


def _verdicts(c, n: int) -> list[tuple[str, str]]:
    """n verdicts through the curate page's JSON API (answer first, as the page does)."""
    done = []
    out = c.post("/curate/api/load", json={}).json()
    while len(done) < n:
        state, html = out["state"], out["html"]
        assert state.get("pid"), out
        m = int(re.search(r'data-m="(\d+)"', html).group(1))
        labels = list(dict.fromkeys(re.findall(r'data-label="([A-Z])"', html)))[:m]
        r = c.post("/curate/api/answer", json={"state": state, "labels": labels, "seconds": 1.0})
        assert r.status_code == 200, r.text
        verdict = "accept" if len(done) % 2 == 0 else "reject"
        r = c.post("/curate/api/verdict", json={"state": state, "verdict": verdict})
        assert r.status_code == 200 and r.json()["msg"].startswith(f"{verdict}: {state['pid']}"), r.text
        done.append((state["pid"], verdict))
        out = r.json()
    return done


def _database_file(engine: str, url: str, data, tmp_path):
    """The file that holds the database: mvp.sqlite itself, or on PostgreSQL a pg_dump backup of it."""
    if engine == "sqlite":
        return data / "mvp.sqlite"
    from sqlalchemy import create_engine

    from db.backup import backup
    eng = create_engine(url)
    try:
        backup(eng, tmp_path / "backup.dump")
    finally:
        eng.dispose()
    return tmp_path / "backup.dump"


def _plant(data, db_file, tmp_path) -> dict[str, str]:
    """In each served folder: hard link, symlink and renamed copy of `db_file`, plus one genuine file.
    Returns {url: "refused" | "served"}."""
    frames = data / "frames"
    real = frames.resolve()
    frames.unlink()
    shutil.copytree(real, frames)                     # a real folder we may put links into
    a_frame, other = sorted(frames.rglob("*.jpg"))[:2]
    copy = tmp_path / "db-copy"
    if db_file.name == "mvp.sqlite":
        sqlite_copy(db_file, copy)                    # the online backup API: never opens it outside SQLite
    else:
        shutil.copyfile(db_file, copy)
    folders = {"frames/ab": ".jpg", "thumbs/240": ".jpg", "cache/clips": ".mp4", "exports": ".zip"}
    urls = {}
    for folder, sfx in folders.items():
        (data / folder).mkdir(parents=True, exist_ok=True)
        for kind in ("hard", "sym", "copy"):
            p = data / folder / f"{kind}{sfx}"
            {"hard": lambda: os.link(db_file, p), "sym": lambda: p.symlink_to(db_file),
             "copy": lambda: shutil.copyfile(copy, p)}[kind]()
            rel = p.relative_to(data).as_posix()
            if folder == "exports":
                urls[f"/datasets/export/{p.name}"] = "refused"
            else:
                urls[f"/data/{rel}"] = "refused"
                if folder.startswith("frames"):
                    urls[f"/thumb/{rel}"] = "refused"
    # genuine files of each folder are served (the rule is not "refuse everything")
    urls[f"/data/{a_frame.relative_to(data).as_posix()}"] = "served"
    urls[f"/thumb/{a_frame.relative_to(data).as_posix()}"] = "served"
    with zipfile.ZipFile(data / "exports" / "real.zip", "w") as z:
        z.writestr("puzzles.jsonl", '{"id": "p1"}\n')
    urls["/datasets/export/real.zip"] = "served"
    os.link(other, frames / "twice.jpg")              # any file with two links is refused, by both names
    urls["/data/frames/twice.jpg"] = urls[f"/data/{other.relative_to(data).as_posix()}"] = "refused"
    return urls


@pytest.mark.parametrize("engine", ["sqlite", "postgresql"])
def test_links_and_copies_of_the_database_are_refused_on_every_route_and_no_verdict_is_lost(
        web_data, tmp_path, engine):
    from testkit.durability import prepare, wal_deleted
    from sqlalchemy import create_engine, text
    data = tmp_path / "data"
    url, users, admin = prepare(web_data[0], data, engine, 60, 1)
    urls = _plant(data, _database_file(engine, url, data, tmp_path), tmp_path)
    srv = Server(data, url, free_port(), tmp_path / "serve.log").start()
    try:
        name, pw = next(iter(users.items()))
        cur, adm = http_login(srv.url, name, pw), http_login(srv.url, *admin)
        for u, expect in urls.items():
            r = adm.get(u)
            if expect == "served":
                assert r.status_code == 200, (u, r.status_code, r.text[:200])
                continue
            assert r.status_code in (403, 404, 415), (u, r.status_code)
            assert not any(m in r.content for m in DB_MAGIC), u
            assert "\n" not in r.text.strip(), u
            if u.startswith(("/data/", "/thumb/")):
                assert cur.get(u).status_code in (403, 404, 415), u
        res = subprocess.run([sys.executable, "-m", "app.cli", "users", "list", "--db", url, "--data", str(data)],
                             cwd=ROOT, capture_output=True, text=True, timeout=120)
        assert res.returncode == 0, res.stderr
        assert not wal_deleted(srv.proc.pid)
        done = _verdicts(cur, 10)
        assert not wal_deleted(srv.proc.pid)
        os.kill(srv.proc.pid, signal.SIGKILL)
        srv.proc.wait()
        srv.start()
    finally:
        srv.stop()
    eng = create_engine(url)
    with eng.connect() as con:
        stored = dict(con.execute(text("SELECT v.puzzle_id, v.verdict FROM puzzle_verdicts v JOIN users u "
                                       "ON u.id = v.user_id WHERE u.name = :n"), {"n": name}).all())
    eng.dispose()
    if engine == "postgresql":
        from testkit.store import drop_pg_database
        drop_pg_database(url)
    assert all(stored.get(p) == v for p, v in done) and len(done) == 10, (done, stored)

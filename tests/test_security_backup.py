"""`mvp db backup` writes its copy 0600 on both engines (the SQLite copy and the pg_dump file hold
password hashes, like mvp.sqlite itself), even under a permissive umask (db/backup.py)."""
from __future__ import annotations

import os
import stat
import subprocess
import sys

import pytest
from fixtures_web import ROOT


@pytest.mark.parametrize("engine", ["sqlite", "postgresql"])
def test_backups_are_written_0600(tmp_path, engine):
    from db.engine import open_db
    from db.users.accounts import add_user
    data = tmp_path / "data"
    data.mkdir()
    if engine == "sqlite":
        url = f"sqlite:///{data / 'mvp.sqlite'}"
    else:
        from testkit.store import create_pg_database
        url = create_pg_database()
    Session = open_db(url, data)
    with Session() as s:
        add_user(s, "keeper", "admin", "keeper-password-1")
        s.commit()
    Session.kw["bind"].dispose()
    out = tmp_path / "copies" / "backup.bin"
    try:
        res = subprocess.run([sys.executable, "-c", "import os, sys; os.umask(0o022); from app.cli.main import main; "
                              "sys.exit(main(sys.argv[1:]))", "db", "backup", str(out), "--db", url, "--data", str(data)],
                             cwd=ROOT, capture_output=True, text=True, timeout=120)
    finally:
        if engine == "postgresql":
            from testkit.store import drop_pg_database
            drop_pg_database(url)
    assert res.returncode == 0, res.stderr
    assert stat.S_IMODE(os.stat(out).st_mode) == 0o600, oct(os.stat(out).st_mode)
    assert out.read_bytes()[:5] in (b"SQLit", b"PGDMP")

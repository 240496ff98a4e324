"""`mvp db backup` writes its copy 0600 on both engines (the SQLite copy and the pg_dump file hold
password hashes, like mvp.sqlite itself), even under a permissive umask (db/backup.py)."""
from __future__ import annotations

import os
import stat
import subprocess
import sys

import pytest
from fixtures_security import studio_with_admin
from fixtures_web import ROOT


@pytest.mark.parametrize("engine", ["sqlite", "postgresql"])
def test_backups_are_written_0600(tmp_path, engine):
    data = tmp_path / "data"
    data.mkdir()
    url = studio_with_admin(engine, data, "keeper", "keeper-password-1")
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

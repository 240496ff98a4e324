"""Online backups of the store while the app keeps writing (docs/store.md, "Backups").

SQLite: SQLite's online backup API (`sqlite3.Connection.backup`) copies the database page by page
through a normal connection, so the copy is one consistent snapshot including what is still in the
WAL, and the server's locks and WAL are left alone. (Copying mvp.sqlite with cp is not a backup: it
misses the WAL, and a process that opens and closes the file outside SQLite drops its own locks.) The
copy is written beside the target, checked with `PRAGMA integrity_check`, then renamed into place.

Both kinds of copy hold password hashes and sessions, so they are created 0600, like mvp.sqlite itself
(`BACKUP_MODE`), whatever the umask.

PostgreSQL: `pg_dump` takes a consistent snapshot without blocking writers; `backup` runs it when it is
on PATH (custom format, restore with `pg_restore --clean --dbname URL FILE`), else says how."""
from __future__ import annotations

import os
import shutil
import sqlite3
import subprocess
from pathlib import Path

from sqlalchemy.engine import Engine, make_url

from mvp_core.atomic import atomic_path
from mvp_core.errors import UserError

BACKUP_MODE = 0o600


def pg_dump_command(url: str, out: Path) -> tuple[list[str], dict[str, str]]:
    """pg_dump's argv and the environment entries it needs: the password goes in PGPASSWORD, never on
    the command line (any local user can read a process's argv in `ps`; docs/security.md)."""
    parsed = make_url(url).set(drivername="postgresql")
    env = {"PGPASSWORD": parsed.password} if parsed.password else {}
    plain = parsed._replace(password=None).render_as_string(hide_password=False)   # URL.set ignores None
    return ["pg_dump", "--format=custom", "--no-owner", f"--file={out}", f"--dbname={plain}"], env


def backup(engine: Engine, out: Path) -> dict:
    """Write a consistent copy of the database to `out` (refused if it exists). Returns a summary."""
    out = Path(out)
    if out.exists():
        raise UserError(f"{out} exists; give a new file name")
    out.parent.mkdir(parents=True, exist_ok=True)
    if engine.dialect.name == "postgresql":
        return _pg_backup(engine, out)
    if engine.dialect.name != "sqlite":
        raise UserError(f"no backup for {engine.dialect.name} databases")
    with atomic_path(out) as tmp:
        raw = engine.raw_connection()       # a normal SQLite connection: busy timeout, WAL, locks intact
        try:
            src: sqlite3.Connection = raw.driver_connection
            os.close(os.open(tmp, os.O_CREAT | os.O_EXCL | os.O_WRONLY, BACKUP_MODE))   # SQLite keeps the mode
            dst = sqlite3.connect(tmp)
            try:
                # one step: in WAL mode it reads one snapshot without blocking the server's writers (a
                # stepwise copy restarts whenever another process writes, so it may never finish)
                src.backup(dst)
                ok = dst.execute("PRAGMA integrity_check").fetchone()[0]
                pages = dst.execute("PRAGMA page_count").fetchone()[0]
                dst.execute("PRAGMA journal_mode=DELETE")   # one self-contained file
            finally:
                dst.close()
        finally:
            raw.close()
        if ok != "ok":                      # the temporary copy is removed, `out` never appears
            raise UserError(f"the backup copy failed its integrity check ({ok}); nothing was written")
    return {"engine": "sqlite", "out": str(out), "pages": pages, "bytes": out.stat().st_size}


def _pg_backup(engine: Engine, out: Path) -> dict:
    url = engine.url.render_as_string(hide_password=False)
    cmd, env = pg_dump_command(url, out)
    if shutil.which("pg_dump") is None:
        raise UserError("PostgreSQL: install pg_dump (postgresql-client) and run: pg_dump --format=custom "
                        f"--file={out} --dbname=URL; restore with pg_restore --clean --dbname URL {out}")
    res = subprocess.run(cmd, capture_output=True, text=True, env={**os.environ, **env},
                         umask=0o777 & ~BACKUP_MODE)        # pg_dump creates --file with the umask's mode
    if res.returncode != 0:
        out.unlink(missing_ok=True)
        msg = (res.stderr.strip().splitlines() or ["failed"])[-1]
        raise UserError(f"pg_dump failed: {msg}")
    return {"engine": "postgresql", "out": str(out), "bytes": out.stat().st_size,
            "restore": f"pg_restore --clean --dbname URL {out}"}

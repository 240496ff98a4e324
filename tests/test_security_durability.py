"""Security probe: nothing acknowledged is lost. Curators judge puzzles over HTTP while the CLI commands
that open the database run beside the server (`mvp users add`, `mvp sets freeze`, `mvp export`, a
`sqlite3` read, `mvp db backup`) and the database's own files are requested over HTTP; the server is
killed (SIGKILL) mid-run and restarted. Every acknowledged verdict is on disk afterwards, none twice,
no puzzle over its k reviews, the server never wrote into a deleted WAL, and the curators carried on
with the sessions they had before the restart (bench/web_durability.py is the same scenario, bigger)."""
from __future__ import annotations

import sqlite3

import pytest

pytestmark = [pytest.mark.browser, pytest.mark.slow]


def test_no_acknowledged_verdict_is_lost_across_cli_commands_and_a_crash(web_data, tmp_path):
    from testkit.durability import prepare, run
    src = web_data[0]
    url, users, admin = prepare(src, tmp_path / "data", "sqlite", 1000, 5)
    out = run(tmp_path / "data", url, users, admin, seconds=8, think_s=0.3, after_restart=("read", "backup"))
    print(out)
    assert out["curator_errors"] == [] and out["cli_failures"] == [], out
    assert out["acked_before_kill"] > 0 and out["acknowledged"] > out["acked_before_kill"], out
    assert out["curators_judging_after_restart"] == len(users), out   # sessions survived the restart
    assert out["lost"] == 0 and out["duplicated_events"] == 0 and out["puzzles_over_k"] == 0, out
    assert not out["wal_deleted_under_server"]
    # the online backups are whole databases: they open, pass the integrity check and hold verdicts
    for tag in ("a", "b"):
        con = sqlite3.connect(tmp_path / f"backup-{tag}.sqlite")
        assert con.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        assert con.execute("SELECT count(*) FROM puzzle_verdicts").fetchone()[0] > 0
        con.close()

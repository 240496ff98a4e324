"""The one atomic write (mvp_core/atomic.py): a file is whole under its name or absent, a failed or
killed writer leaves the old file as it was and no temporary file behind."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from mvp_core.atomic import atomic_path, atomic_write_bytes, atomic_write_text

ROOT = Path(__file__).resolve().parent.parent


def test_whole_file_and_no_leftovers(tmp_path):
    f = tmp_path / "status.json"
    atomic_write_text(f, '{"state": "running"}')
    atomic_write_text(f, '{"state": "finished"}')
    assert f.read_text() == '{"state": "finished"}' and os.listdir(tmp_path) == ["status.json"]


def test_a_failing_writer_keeps_the_old_file(tmp_path):
    f = tmp_path / "set.jsonl"
    atomic_write_bytes(f, b"old\n")
    with pytest.raises(ValueError), atomic_path(f) as tmp:
        tmp.write_bytes(b"half of the new ")
        raise ValueError("the writer failed")
    assert f.read_bytes() == b"old\n" and os.listdir(tmp_path) == ["set.jsonl"]


def test_the_temporary_name_is_hidden_unique_and_keeps_a_given_suffix(tmp_path):
    f = tmp_path / "clip.mp4"
    with atomic_path(f) as a, atomic_path(f) as b, atomic_path(f, suffix=".tmp.mp4") as c:
        for t in (a, b, c):
            t.write_bytes(b"x")
        assert a != b and a.parent == f.parent and a.name.startswith(".") and c.name.endswith(".tmp.mp4")
    assert f.read_bytes() == b"x"


def test_kill_minus_9_mid_write_leaves_old_or_new_whole(tmp_path):
    """A writer killed while it writes 64 MiB in small pieces: the name holds the old bytes, never a part."""
    f = tmp_path / "big.bin"
    atomic_write_bytes(f, b"o" * 1000)
    code = ("import sys, time\nfrom mvp_core.atomic import atomic_path\n"
            "with atomic_path(sys.argv[1]) as t, open(t, 'wb') as w:\n"
            "    print('writing', flush=True)\n"
            "    for _ in range(1 << 14):\n        w.write(b'n' * 4096); w.flush(); time.sleep(0.001)\n")
    p = subprocess.Popen([sys.executable, "-c", code, str(f)], cwd=ROOT, stdout=subprocess.PIPE, text=True,
                         env=dict(os.environ, PYTHONPATH=str(ROOT)))
    assert p.stdout.readline().strip() == "writing"
    while not any(q.name.startswith(".big.bin") and q.stat().st_size > 0 for q in tmp_path.iterdir()):
        assert p.poll() is None, "the writer ended before it was killed"
        time.sleep(0.01)
    p.send_signal(signal.SIGKILL)
    p.wait()
    assert f.read_bytes() == b"o" * 1000

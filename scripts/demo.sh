#!/usr/bin/env bash
# The README's first command: real sample videos -> puzzles in SQLite -> tiny-model rollouts -> the app on :7860.
# Extra arguments go to `mvp demo` (e.g. --no-serve to prepare only).
set -euo pipefail
cd "$(dirname "$0")/.."
V="${VENV:-.venv}"   # CI: VENV=.venv-runtime, an environment with the runtime requirements only
VENV="$V" scripts/setup_env.sh runtime
DATA="${MVP_DATA_DIR:-$PWD/data/demo}"
if [ -e "$DATA" ] && [ ! -d "$DATA" ]; then
  echo "error: the data directory $DATA exists and is not a directory (set MVP_DATA_DIR to another path)" >&2
  exit 2
fi
mkdir -p "$DATA/videos"
# One demo per data directory: two at once would train into the same run and race on the sample cache.
# The lock is on fd 9, inherited by every step and by the server (exec below), released when the last exits.
exec 9>>"$DATA/.demo.lock"
if ! "$V"/bin/python -c 'import fcntl; fcntl.flock(9, fcntl.LOCK_EX | fcntl.LOCK_NB)' 2>/dev/null; then
  echo "error: another demo is running on $DATA (it holds $DATA/.demo.lock); wait for it or set MVP_DATA_DIR" >&2
  exit 2
fi
case " $* " in
  *" --no-serve "*) ;;
  *) "$V"/bin/python -m app.cli.serve 127.0.0.1 "${PORT:-7860}" ;;   # a taken port: say so now, not after minutes of work
esac
"$V"/bin/python scripts/sample_videos.py "$DATA/videos"
# 3 fps and up to 8 puzzles a video: the short sample videos have too few distinct frames at 1 fps for more
# than one or two start times (7 puzzles); 4 fps gives 13 but a stronger boundary shortcut in the audit
# (docs/SYNTHESIS.md). --adapt gives a video no start admits at N=8, l=4 a smaller shape, the ambiguity
# guard unchanged. The demo summary names a video that still gives none, and why.
"$V"/bin/mvp synth "$DATA/videos" --data "$DATA" --per-video 8 --fps 3 --workers 2 --adapt
"$V"/bin/mvp audit --data "$DATA" --json "$DATA/audit.json"   # prints the table; the JSON goes to the file
# demo login (printed), tiny random-weight model rollouts, then the app on http://127.0.0.1:7860
exec "$V"/bin/mvp demo --data "$DATA" --host 127.0.0.1 --port "${PORT:-7860}" "$@"

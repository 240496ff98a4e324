#!/usr/bin/env bash
# The README's first command: real sample videos -> puzzles in SQLite -> tiny-model rollouts -> the app on :7860.
# Extra arguments go to `mvp demo` (e.g. --no-serve to prepare only).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup_env.sh runtime
DATA="${MVP_DATA_DIR:-$PWD/data/demo}"
mkdir -p "$DATA/videos"
.venv/bin/python scripts/sample_videos.py "$DATA/videos"
.venv/bin/mvp synth "$DATA/videos" --data "$DATA" --per-video 4 --workers 2
.venv/bin/mvp audit --data "$DATA" --json "$DATA/audit.json"   # prints the table; the JSON goes to the file
# demo login (printed), tiny random-weight model rollouts, then the app on http://127.0.0.1:7860
exec .venv/bin/mvp demo --data "$DATA" --host 127.0.0.1 --port "${PORT:-7860}" "$@"

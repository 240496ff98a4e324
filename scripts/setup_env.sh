#!/usr/bin/env bash
# Create .venv and install the pinned requirements (idempotent; re-run after requirements change).
# Usage: scripts/setup_env.sh [runtime|dev]
set -euo pipefail
cd "$(dirname "$0")/.."
kind="${1:-runtime}"
req=requirements.txt
[ "$kind" = dev ] && req=requirements-dev.txt
PY="${PYTHON:-python3}"
if [ ! -x .venv/bin/python ]; then
  "$PY" -m venv .venv
  .venv/bin/pip install -q --upgrade pip
fi
hash="$(cat requirements.txt requirements-dev.txt pyproject.toml | sha256sum | cut -c1-16)"
stamp=".venv/.installed-$kind-$hash"
# dev includes runtime (-r requirements.txt): a dev install needs no second pip run
if [ ! -f "$stamp" ] && [ ! -f ".venv/.installed-dev-$hash" ]; then
  .venv/bin/pip install -q -r "$req"
  .venv/bin/pip install -q --no-deps -e .
  touch "$stamp"
fi

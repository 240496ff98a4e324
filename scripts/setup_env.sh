#!/usr/bin/env bash
# Create the venv (.venv) and install the pinned requirements (idempotent; re-run after requirements change).
# Usage: [VENV=DIR] scripts/setup_env.sh [runtime|dev]   (DIR defaults to .venv; CI builds a runtime-only one)
set -euo pipefail
cd "$(dirname "$0")/.."
kind="${1:-runtime}"
req=requirements.txt
[ "$kind" = dev ] && req=requirements-dev.txt
PY="${PYTHON:-python3}"
V="${VENV:-.venv}"
if [ ! -x "$V"/bin/python ]; then
  "$PY" -m venv "$V"
  "$V"/bin/pip install -q --upgrade pip
fi
hash="$(cat requirements.txt requirements-dev.txt pyproject.toml setup.py | sha256sum | cut -c1-16)"
stamp="$V/.installed-$kind-$hash"
# dev includes runtime (-r requirements.txt): a dev install needs no second pip run
if [ ! -f "$stamp" ] && [ ! -f "$V/.installed-dev-$hash" ]; then
  "$V"/bin/pip install -q -r "$req"
  "$V"/bin/pip install -q --no-deps -e .
  touch "$stamp"
fi

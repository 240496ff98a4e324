#!/usr/bin/env bash
# Build the peer overlays of requirements-peers.txt (idempotent; a no-op when already built).
# Each overlay .peers/<name> holds one consumer's package and the pins it needs apart from .venv,
# installed with --no-deps; tests/test_export_peers.py runs the consumer's loader with
# PYTHONPATH=.peers/<name> in front of .venv's site-packages (torch and the rest come from .venv).
# Usage: scripts/setup_peers.sh            (needs .venv: scripts/setup_env.sh dev)
set -euo pipefail
cd "$(dirname "$0")/.."
PY=.venv/bin/python
ROOT=.peers
mkdir -p "$ROOT"
for name in $(awk '!/^#/ && NF {print $1}' requirements-peers.txt | sort -u); do
  pins="$(awk -v n="$name" '!/^#/ && $1 == n {print $2}' requirements-peers.txt)"
  # rebuilt when its pins or .venv's python/torch change (the overlay's compiled parts sit beside them)
  key="$(printf '%s\n' "$pins" "$(readlink -f "$PY")" "$(ls -d .venv/lib/python*/site-packages/torch-*.dist-info)" \
         | sha256sum | cut -c1-16)"
  [ -f "$ROOT/$name/.built-$key" ] && continue
  tmp="$ROOT/.$name.tmp"
  rm -rf "$tmp"
  # shellcheck disable=SC2086
  "$PY" -m pip install -q --disable-pip-version-check --no-deps --no-build-isolation --target "$tmp" $pins
  # the verl wheel also ships top-level tests/ and scripts/ folders: keep them off the import path
  rm -rf "$tmp/tests" "$tmp/scripts" "$tmp/bin"
  touch "$tmp/.built-$key"
  rm -rf "$ROOT/$name"
  mv "$tmp" "$ROOT/$name"
done

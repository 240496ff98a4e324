#!/usr/bin/env bash
# The README's test command: set up everything the suite needs, then run it.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup_env.sh dev
scripts/setup_peers.sh   # the engines' own loaders for tests/test_export_peers.py (requirements-peers.txt)
# Debian's chromium for the browser tests (Playwright drives /usr/bin/chromium; no browser download).
if [ ! -x /usr/bin/chromium ]; then
  SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  $SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq chromium >/dev/null
fi
scripts/ensure_postgres.sh
.venv/bin/python scripts/sample_videos.py >/dev/null
# --fast: the subset to run before each commit (README): no test marked slow, browser or serve (tests/conftest.py).
# The whole suite and --fast run in MVP_TEST_WORKERS processes (2 by default; pytest-xdist, one file per worker
# at a time, so a file's module fixtures are built once); with other arguments pytest runs as given.
mode=()
if [ "${1:-}" = "--fast" ]; then
  shift
  mode=(-m "not slow and not browser and not serve")
fi
if [ "$#" -eq 0 ] && [ "${MVP_TEST_WORKERS:-2}" -gt 1 ]; then
  mode+=(-n "${MVP_TEST_WORKERS:-2}" --dist loadfile)
fi
exec .venv/bin/python -m pytest -q -p no:cacheprovider "${mode[@]}" "$@"

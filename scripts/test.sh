#!/usr/bin/env bash
# The README's test command: set up everything the suite needs, then run it.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup_tests.sh
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

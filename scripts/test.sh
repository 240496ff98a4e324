#!/usr/bin/env bash
# The README's test command: set up everything the suite needs, then run it.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup_tests.sh
# --fast: the subset to run before each commit (README): no test marked slow, browser or serve (tests/conftest.py).
# MVP_TEST_WORKERS=N runs the whole suite or --fast in N processes (pytest-xdist, one file per worker at a time,
# so a file's module fixtures are built once; the files sharing a session studio go to one worker, so it is
# built once: tests/conftest.py); 2 by default (MVP_TEST_WORKERS=1: one process); with other arguments
# pytest runs as given.
mode=()
if [ "${1:-}" = "--fast" ]; then
  shift
  mode=(-m "not slow and not browser and not serve")
fi
workers="${MVP_TEST_WORKERS:-2}"
if [ "$#" -eq 0 ] && [ "$workers" -gt 1 ]; then
  mode+=(-n "$workers" --dist loadfile)
fi
exec .venv/bin/python -m pytest -q -p no:cacheprovider "${mode[@]}" "$@"

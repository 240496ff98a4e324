#!/usr/bin/env bash
# Everything the test suite needs (idempotent): .venv with the test tools, the peer overlays, Debian's
# chromium, PostgreSQL, the sample videos. scripts/test.sh runs it first; CI runs it beside the demo (.ci/run).
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

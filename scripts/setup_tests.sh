#!/usr/bin/env bash
# Everything the test suite needs (idempotent): .venv with the test tools, the peer overlays, Debian's
# chromium, PostgreSQL, the sample videos. scripts/test.sh runs it first; CI runs it beside the demo (.ci/run).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup_env.sh dev
scripts/setup_peers.sh   # the engines' own loaders for tests/test_export_peers.py (requirements-peers.txt)
# Debian's chromium, no browser download: Playwright drives its headless build in the browser tests
# (/usr/bin/chromium-headless-shell, testkit/web.py TEST_CHROMIUM) and the whole browser in the page benches.
if [ ! -x /usr/bin/chromium ] || [ ! -x /usr/bin/chromium-headless-shell ]; then
  SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  $SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq chromium \
    chromium-headless-shell >/dev/null
fi
scripts/ensure_postgres.sh
.venv/bin/python scripts/sample_videos.py >/dev/null

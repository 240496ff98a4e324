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
fi
# The pins go in through uv (pinned below), which downloads and unpacks in parallel and links a second
# environment's files from its cache: on the 2-core machine a runtime environment took 60 s against pip's 121 s,
# and CI builds two at once (docs/BENCHMARKS.md, "Environment setup"; docs/install.md). uv reads no pip
# configuration, so it gets pip's package sources here (scripts/pip_settings_for_uv.py), the system's
# certificates (--native-tls), pip's rule across indexes (the best version anywhere) and writes the bytecode
# pip writes; where uv cannot install, pip does.
UV_PIN="uv==0.13.10"
install_pins() {   # the pins of $1, then the checkout itself (--no-deps -e .)
  local sources
  if "$V"/bin/pip install -q "$UV_PIN" && sources="$("$V"/bin/python scripts/pip_settings_for_uv.py)"; then
    mapfile -t sources <<<"$sources"
    [ -n "${sources[0]:-}" ] || sources=()
    local uv=("$V"/bin/uv pip install -q --python "$V/bin/python" --compile-bytecode --native-tls
              --index-strategy unsafe-best-match "${sources[@]}")
    if "${uv[@]}" -r "$1" && "${uv[@]}" --no-deps -e .; then
      return 0
    fi
  fi
  echo "setup_env: uv could not install $1; installing with pip" >&2
  "$V"/bin/pip install -q --upgrade pip
  "$V"/bin/pip install -q -r "$1"
  "$V"/bin/pip install -q --no-deps -e .
}
hash="$(cat requirements.txt requirements-dev.txt pyproject.toml setup.py | sha256sum | cut -c1-16)"
stamp="$V/.installed-$kind-$hash"
# dev includes runtime (-r requirements.txt): a dev install needs no second pip run
if [ ! -f "$stamp" ] && [ ! -f "$V/.installed-dev-$hash" ]; then
  # PyPI's Linux torch is the CUDA build (its nvidia-* and triton wheels are ~4 of the ~7 GB installed);
  # a machine without a GPU installs torch and torchvision from a CPU index first when TORCH_INDEX_URL names
  # one (https://download.pytorch.org/whl/cpu; docs/install.md); the pins below then find them installed
  # (2.14.1+cpu satisfies ==2.14.1). Not the default: that index is not reachable everywhere PyPI is.
  if [ -n "${TORCH_INDEX_URL:-}" ]; then
    "$V"/bin/pip install -q --index-url "$TORCH_INDEX_URL" $(grep -E '^torch(vision)?==' requirements.txt)
  elif ! command -v nvidia-smi >/dev/null 2>&1; then
    echo "setup_env: no GPU seen; torch comes from PyPI as its CUDA build (TORCH_INDEX_URL=... for a CPU one: docs/install.md)" >&2
  fi
  install_pins "$req"
  touch "$stamp"
fi

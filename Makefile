# `make demo` and `make test` do all the set-up on a fresh machine (see README.md).
VENV ?= .venv
BIN := $(VENV)/bin

.PHONY: setup starter starter-long demo test lint docs bench clean

setup:
	bash scripts/setup.sh

# The starter GLiNER + GLiREL pair, trained offline from all-MiniLM-L6-v2 on Re-DocRED (once per
# machine, cached under models/starter-<recipe hash>/, never committed; time in bench/RESULTS.md).
starter: setup
	$(BIN)/python -m tiny_graphrag.finetune.starter --quiet

# The same recipe trained longer, for a machine with time or a GPU (under an hour on two cores;
# models/starter-long-<recipe hash>/). Use it with --gliner-model/--glirel-model or `--base DIR`.
starter-long: setup
	$(BIN)/python -m tiny_graphrag.finetune.starter --quiet --long

# The Obama article: one index with typed relations (spaCy entities + the starter GLiREL, or the
# starter pair: EXTRACTOR=gliner), its best triples, and three questions over it (examples/demo.sh).
demo: setup starter
	bash examples/demo.sh

test: setup
	$(BIN)/python -m pytest -q -n 2

# The documentation site into site/ (open site/index.html), offline; --strict fails on a broken link,
# a missing anchor or an API reference that does not resolve. NO_MKDOCS_2_WARNING: Material's banner.
docs: setup
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict

bench: setup
	$(BIN)/python -m bench

lint: setup
	$(BIN)/ruff check src tests bench scripts examples
	$(BIN)/ruff format --check src tests bench scripts
	$(BIN)/mypy

clean:
	rm -rf site graphs/obama graphs/.obama.cache graphs/obama-typed graphs/.obama-typed.cache graphs/.cache

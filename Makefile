# `make demo` and `make test` do all the set-up on a fresh machine (see README.md).
VENV ?= .venv
BIN := $(VENV)/bin

.PHONY: setup starter demo test bench clean

setup:
	bash scripts/setup.sh

# The starter GLiNER + GLiREL pair, trained offline from all-MiniLM-L6-v2 on Re-DocRED (about 10
# minutes on two cores, once: cached under models/starter-<recipe hash>/; never committed).
starter: setup
	$(BIN)/python -m tiny_graphrag.finetune.starter --quiet

demo: setup starter
	bash examples/demo.sh

test: setup
	$(BIN)/python -m pytest -q

bench: setup
	$(BIN)/python -m bench

clean:
	rm -rf graphs/obama graphs/.cache

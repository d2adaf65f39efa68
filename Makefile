# `make demo` and `make test` do all the set-up on a fresh machine (see README.md).
VENV ?= .venv
BIN := $(VENV)/bin

.PHONY: setup demo test bench clean

setup:
	bash scripts/setup.sh

demo: setup
	bash examples/demo.sh

test: setup
	$(BIN)/python -m pytest -q

bench: setup
	$(BIN)/python -m bench

clean:
	rm -rf graphs/obama graphs/.obama.cache graphs/.cache

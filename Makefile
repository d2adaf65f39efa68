# `make demo` and `make test` do all the set-up on a fresh machine (see README.md).
VENV ?= .venv
BIN := $(VENV)/bin

.PHONY: setup demo test lint bench clean

setup:
	bash scripts/setup.sh

demo: setup
	bash examples/demo.sh

test: setup
	$(BIN)/python -m pytest -q -n 2

bench: setup
	$(BIN)/python -m bench

lint: setup
	$(BIN)/ruff check src tests bench scripts examples
	$(BIN)/ruff format --check src tests bench scripts

clean:
	rm -rf graphs/obama graphs/.obama.cache graphs/.cache

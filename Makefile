# The two entry points of the README: `make demo` and `make test`.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
DATA := src/dpgm/datasets

.PHONY: demo test lint setup clean

$(STAMP): pyproject.toml
	test -d $(VENV) || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e ".[dev]"
	touch $(STAMP)

setup: $(STAMP)

demo: $(STAMP)
	mkdir -p demo-output
	$(BIN)/dpgm synth $(DATA)/penguins.csv --schema $(DATA)/penguins-schema.json \
		--mechanism aim --epsilon 1 --out demo-output/penguins-synth.csv \
		--ledger demo-output/ledger.json --force
	$(BIN)/dpgm evaluate $(DATA)/penguins.csv demo-output/penguins-synth.csv \
		--schema $(DATA)/penguins-schema.json --ways 1 2 \
		--report demo-output/report --ledger demo-output/ledger.json --force
	head -5 demo-output/penguins-synth.csv

test: $(STAMP)
	$(BIN)/python -m pytest

lint: $(STAMP)
	$(BIN)/ruff check src tests benchmarks examples experiments

clean:
	rm -rf $(VENV) demo-output

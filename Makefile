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
	$(BIN)/dpgm synth $(DATA)/diamonds.csv.gz --schema $(DATA)/diamonds-schema.json \
		--mechanism mst --epsilon 1 --discretize-share 0.1 \
		--out demo-output/diamonds-synth.csv --ledger demo-output/ledger.json \
		--save-model demo-output/diamonds.dpgm --force
	$(BIN)/dpgm evaluate $(DATA)/diamonds.csv.gz demo-output/diamonds-synth.csv \
		--schema $(DATA)/diamonds-schema.json --ways 1 2 \
		--report demo-output/report --ledger demo-output/ledger.json --force
	head -5 demo-output/diamonds-synth.csv

test: $(STAMP)
	$(BIN)/python -m pytest

lint: $(STAMP)
	$(BIN)/ruff check src tests benchmarks examples experiments

clean:
	rm -rf $(VENV) demo-output

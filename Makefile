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
	$(BIN)/dpgm split $(DATA)/diamonds.csv.gz --holdout 0.2 --seed 1 \
		--train demo-output/diamonds-train.csv --holdout-out demo-output/diamonds-holdout.csv --force
	$(BIN)/dpgm synth demo-output/diamonds-train.csv --schema $(DATA)/diamonds-schema.json \
		--mechanism mst --epsilon 1 --discretize-share 0.1 \
		--out demo-output/diamonds-synth.csv --ledger demo-output/ledger.json \
		--save-model demo-output/diamonds.dpgm --force
	$(BIN)/dpgm evaluate demo-output/diamonds-train.csv demo-output/diamonds-synth.csv \
		--model demo-output/diamonds.dpgm --holdout demo-output/diamonds-holdout.csv \
		--target price --ways 1 2 --report demo-output/report --ledger demo-output/ledger.json \
		--force
	head -5 demo-output/diamonds-synth.csv

# one pytest worker per core (pytest-xdist); TEST_WORKERS=0 runs the suite in one process
TEST_WORKERS ?= auto
test: $(STAMP)
	$(BIN)/python -m pytest -n $(TEST_WORKERS)

lint: $(STAMP)
	$(BIN)/ruff check src tests benchmarks examples experiments

clean:
	rm -rf $(VENV) demo-output

# Two commands on a fresh machine: `make run` (the ABSA study) and `make test`.
# The first use creates .venv and installs the project (torch first: the CPU wheel of exactly 2.13.0).
VENV := .venv
PY := $(VENV)/bin/python
# the data root: $MTL_DATA_DIR, else ./data, else the shared copy beside this checkout
DATA ?= $(or $(MTL_DATA_DIR),$(if $(wildcard data/semeval2014),data,../shared/data))
STUDY ?= absa
ARGS ?=

.PHONY: run test test-all lint data-check ui

$(VENV)/.installed: pyproject.toml
	python3 -m venv $(VENV)
	$(VENV)/bin/pip install -q torch==2.13.0
	$(VENV)/bin/pip install -q -e '.[dev]'
	touch $@

data-check:
	@test -d "$(DATA)/semeval2014" || { echo "error: no datasets under data root '$(DATA)': run '$(PY) -m trainables.data download' (needs internet) or set MTL_DATA_DIR=/path/to/data (layout: README, Data)" >&2; exit 2; }

run: $(VENV)/.installed data-check  ## the study (STUDY=absa, ARGS="--trials 12 ...")
	MTL_DATA_DIR=$(DATA) $(PY) -m search.run $(STUDY) $(ARGS)

test: $(VENV)/.installed data-check  ## the test suite (what CI runs): two workers, one test file each at a time
	MTL_DATA_DIR=$(DATA) $(PY) -m pytest -n 2 --dist loadfile

lint: $(VENV)/.installed  ## ruff: lint and format check (configured in pyproject.toml)
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .

test-all: $(VENV)/.installed data-check  ## the suite plus the extended tests (multi-node clusters, a study on an mlflow server)
	MTL_DATA_DIR=$(DATA) $(PY) -m pytest -n 2 --dist loadfile -m ""

ui: $(VENV)/.installed  ## the MLflow UI of the local store, on 127.0.0.1:5000
	$(VENV)/bin/mlflow ui --backend-store-uri sqlite:///mlflow.db -h 127.0.0.1 -p 5000

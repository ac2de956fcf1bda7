# Two commands on a fresh machine: `make run` (the ABSA study) and `make test`.
# The first use creates .venv and installs the project, torch first at exactly 2.13.0: pip takes the build its
# configured sources offer (a local CPU wheel where pip's find-links has one, as on this project's CI; from PyPI
# the default Linux build, with CUDA; for the CPU build elsewhere: PIP_EXTRA_INDEX_URL=https://download.pytorch.org/whl/cpu).
VENV := .venv
PY := $(VENV)/bin/python
# the data root: $MTL_DATA_DIR, else ./data, else the shared copy beside this checkout
DATA ?= $(or $(MTL_DATA_DIR),$(if $(wildcard data/semeval2014),data,../shared/data))
STUDY ?= absa
ARGS ?=
# the follow-ups: the local MLflow store a study wrote, its registered model, a file of inputs
TRACKING ?= sqlite:///mlflow.db
MODEL ?= models:/$(STUDY)-best/1
INPUT ?= sentences.txt
OUT ?= predictions.jsonl
PORT ?= 5001

.PHONY: run test test-all lint data-check ui report predict serve dashboard

$(VENV)/.installed: pyproject.toml
	python3 -m venv $(VENV)
	$(VENV)/bin/pip install -q torch==2.13.0
	$(VENV)/bin/pip install -q -e '.[dev]'
	touch $@

data-check:
	@test -d "$(DATA)/semeval2014" || { echo "error: no datasets under data root '$(DATA)': run '$(PY) -m trainables.data download' (needs internet) or set MTL_DATA_DIR=/path/to/data (layout: docs/reference.md, Data)" >&2; exit 2; }

run: $(VENV)/.installed data-check  ## the study (STUDY=absa, ARGS="--trials 12 ...")
	MTL_DATA_DIR=$(DATA) $(PY) -m search.run $(STUDY) $(ARGS)

test: $(VENV)/.installed data-check  ## the test suite (what CI runs): two workers, one test file each at a time
	MTL_DATA_DIR=$(DATA) $(PY) -m pytest -n 2 --dist loadfile

lint: $(VENV)/.installed  ## ruff: lint and format check (configured in pyproject.toml)
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .

test-all: $(VENV)/.installed data-check  ## the suite plus the extended tests (multi-node clusters, a study on an mlflow server)
	MTL_DATA_DIR=$(DATA) $(PY) -m pytest -n 2 --dist loadfile -m ""

# the follow-ups below run the tools of .venv by path: no activated environment needed
ui: $(VENV)/.installed  ## the MLflow UI of the local store, on 127.0.0.1:5000
	$(VENV)/bin/mlflow ui --backend-store-uri $(TRACKING) -h 127.0.0.1 -p 5000

report: $(VENV)/.installed  ## the latest study's report again, into results/ (ARGS="--name RUN")
	MTL_DATA_DIR=$(DATA) $(PY) -m search.report $(STUDY) --tracking-uri $(TRACKING) $(ARGS)

predict: $(VENV)/.installed  ## MODEL's predictions for INPUT (one input per line) into OUT, JSON lines
	MTL_DATA_DIR=$(DATA) $(PY) -m search.predict --tracking-uri $(TRACKING) --model $(MODEL) --input $(INPUT) --out $(OUT)

serve: $(VENV)/.installed  ## MODEL over REST on 127.0.0.1:PORT (POST /invocations)
	MTL_DATA_DIR=$(DATA) $(PY) -m search.serve --tracking-uri $(TRACKING) --model $(MODEL) --port $(PORT)

$(VENV)/bin/optuna-dashboard: $(VENV)/.installed
	$(VENV)/bin/pip install -q optuna-dashboard

# the last study's Optuna store (search.infra.last_study), else ./optuna.db
STORAGE ?= $(shell $(PY) -m search.infra.last_study optuna 2>/dev/null || echo sqlite:///optuna.db)
dashboard: $(VENV)/bin/optuna-dashboard  ## the Optuna dashboard of STORAGE (default: the last study's, the "Optuna" line it printed) on 127.0.0.1:8080
	$(VENV)/bin/optuna-dashboard '$(STORAGE)' --host 127.0.0.1 --port 8080

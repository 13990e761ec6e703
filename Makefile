# Thin wrapper around the course's own commands. Needs only python3 (>= 3.10) and make.
#   make lab    open the course in JupyterLab on your own copies in work/
#   make test   run every test (library, notebooks, build drift, leaks, grading round trips, lint)
#   make build  regenerate source/ and release/ from the masters in notebooks/
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
# Extra arguments for JupyterLab, e.g. make lab LAB_ARGS="--no-browser --port 8899"
LAB_ARGS ?=
# Extra arguments for pytest, e.g. make test PYTEST_ARGS="-k graph"
PYTEST_ARGS ?=
JOBS ?= 2
export PATH := $(abspath $(BIN)):$(PATH)

.PHONY: lab test build check venv clean system-deps

# chromium, bubblewrap, postgresql: installed as root, else the exact command is printed.
# With them present, a missing one is an error in the tests, never a silent skip.
COURSE_SKIP_SYSTEM_DEPS ?= 0
export COURSE_SKIP_SYSTEM_DEPS
system-deps:
	bash scripts/system_deps.sh

venv: $(STAMP)

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	touch $(STAMP)

lab: $(STAMP)
	$(BIN)/course lab $(LAB_ARGS)

build: $(STAMP)
	$(BIN)/course build

check: $(STAMP)
	$(BIN)/course build --check

test: $(STAMP) system-deps
	COURSE_REQUIRE_BROWSER=$(if $(filter 1,$(COURSE_SKIP_SYSTEM_DEPS)),,1) \
	COURSE_REQUIRE_POSTGRES=$(if $(filter 1,$(COURSE_SKIP_SYSTEM_DEPS)),,1) \
	$(BIN)/python -m pytest -n $(JOBS) --dist loadfile --nbval-lax tests $(wildcard source) $(PYTEST_ARGS)

clean:
	rm -rf $(VENV) .pytest_cache

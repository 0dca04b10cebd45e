# `make run`  : set up the venv and answer a sample question.
# `make test` : set up the venv (+ nix-bin, postgresql and chromium when missing), `ruff check`, then the test suite
#               in parallel (WORKERS: one per core, and one more).
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: run test lint bench nix postgres chromium clean

$(BIN)/python:
	$(PY) -m venv $(VENV)

# check-jsonschema (the workflow test's schema check) lives in a venv of its own, inside .venv:
# in the project's it brings click, and httpx then imports its command-line tool (click, rich,
# pygments) with every `import httpx`, ~60 ms in each of the suite's torchbot processes, as it
# never does in the image.
TOOLS := $(VENV)/tools

$(STAMP): pyproject.toml | $(BIN)/python
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q -e '.[test]'
	touch $(STAMP)

$(TOOLS)/bin/check-jsonschema: | $(BIN)/python
	$(PY) -m venv $(TOOLS) && $(TOOLS)/bin/pip install -q 'check-jsonschema>=0.29'

# nix-instantiate / nix-build check and build recipes in the tests.
nix:
	@command -v nix-instantiate >/dev/null 2>&1 || { \
	  echo "installing nix-bin (needs root)"; \
	  SUDO=""; [ "$$(id -u)" = 0 ] || SUDO=sudo; \
	  $$SUDO apt-get update -qq && $$SUDO apt-get install -y -qq nix-bin >/dev/null; }

# A PostgreSQL server binary (initdb, pg_ctl) for the state-store tests; the tests start
# their own server in a temporary directory.
postgres:
	@ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 || command -v initdb >/dev/null 2>&1 || { \
	  echo "installing postgresql (needs root)"; \
	  SUDO=""; [ "$$(id -u)" = 0 ] || SUDO=sudo; \
	  $$SUDO apt-get update -qq && $$SUDO apt-get install -y -qq postgresql >/dev/null; }

# Debian's chromium: the dashboard page test renders /dashboard headless and keeps a screenshot.
chromium:
	@command -v chromium >/dev/null 2>&1 || { \
	  echo "installing chromium (needs root)"; \
	  SUDO=""; [ "$$(id -u)" = 0 ] || SUDO=sudo; \
	  $$SUDO apt-get update -qq && $$SUDO apt-get install -y -qq chromium >/dev/null; }

run: $(STAMP)
	$(BIN)/torchbot ask "which variant for an H100 with Graviton3"
	@echo
	@echo "Ask your own:  $(BIN)/torchbot ask 'RTX 4090 with a Ryzen 9 7950X, python 3.12'"
	@echo "Paste output:  nvidia-smi | $(BIN)/torchbot ask -"
	@echo "Machine form:  $(BIN)/torchbot ask --json 'p5.48xlarge'"

lint: $(STAMP)
	$(BIN)/ruff check .

# The suite runs in parallel (pytest-xdist), one file per worker at a time (`--dist loadfile`: a
# file's module fixtures are built once), one worker more than the machine has cores: many tests
# wait on the processes and servers they start, and the extra worker fills those waits (on the
# 2-core machine, measured on 2026-12-01: 349 s with 3 workers, 413 s with 2, 379 s with 4).
# `make test WORKERS=1` runs it in one process.
WORKERS ?= $(shell echo $$(( $$(nproc 2>/dev/null || echo 1) + 1 )))

# The tests start hundreds of torchbot processes, each importing the project: its bytecode is
# compiled once here and kept (an environment with PYTHONDONTWRITEBYTECODE set would make every
# one of them compile it again, about 0.15 s of CPU each).
# The tests' temporary directories (about 600 MB a run): the last run's stay to look at; the
# next run moves them aside and deletes them in the background at low priority. Left to pytest,
# each run would delete an earlier run's at its end, one process on the clock.
TEST_TMP ?= $(or $(TMPDIR),/tmp)/torchbot-tests-$(shell id -u)-$(shell echo '$(CURDIR)' | cksum | cut -d' ' -f1)

test: lint nix postgres chromium $(TOOLS)/bin/check-jsonschema
	env -u PYTHONDONTWRITEBYTECODE $(BIN)/python -m compileall -q -j 0 bot release config tests bench >/dev/null
	mkdir -p $(TEST_TMP) && if [ -d $(TEST_TMP)/last ]; then mv $(TEST_TMP)/last $(TEST_TMP)/old.$$$$; fi
	(nice -n 19 rm -rf $(TEST_TMP)/old.* >/dev/null 2>&1 &)
	env -u PYTHONDONTWRITEBYTECODE $(BIN)/python -m pytest -n $(WORKERS) --dist loadfile --basetemp $(TEST_TMP)/last

bench: $(STAMP)
	$(BIN)/python bench/ask.py

clean:
	rm -rf $(VENV) *.egg-info .pytest_cache

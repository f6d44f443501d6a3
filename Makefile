# Both targets create .venv themselves on a machine with only Python 3.11 and make.
PYTHON ?= python3.11
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

NPM_STAMP := tests/npm/node_modules/.installed

.PHONY: run test lint unit bench check-schema clean

$(STAMP): pyproject.toml
	@command -v $(PYTHON) >/dev/null 2>&1 || { echo "need $(PYTHON) on PATH"; exit 1; }
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[dev]'
	touch $(STAMP)

# Reference servers from npm (the TypeScript SDK side) for integration tests.
$(NPM_STAMP): tests/npm/package.json tests/npm/package-lock.json
	cd tests/npm && npm ci --no-audit --no-fund --loglevel=error
	touch $(NPM_STAMP)

run: $(STAMP)
	$(PY) -m gateway.demo.run_demo

test: $(STAMP) $(NPM_STAMP) lint
	rm -f .coverage .coverage.*
	$(PY) -m coverage run -m pytest
	$(PY) -m coverage combine --quiet
	$(PY) -m coverage report --skip-empty --fail-under=85

unit: $(STAMP)
	$(PY) -m pytest tests/unit

lint: $(STAMP)
	$(VENV)/bin/ruff check gateway tests bench examples
	$(VENV)/bin/mypy
	$(PY) -m gateway.policy.schema_export --check policies/schema.json

bench: $(STAMP)
	$(PY) bench/run_benchmarks.py

clean:
	rm -rf $(VENV) .coverage .mypy_cache .ruff_cache

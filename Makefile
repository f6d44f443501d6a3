# Both targets create .venv themselves on a machine with only Python 3.11 and make.
PYTHON ?= python3.11
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

NPM_STAMP := tests/npm/node_modules/.installed
# The MCP conformance suite and the Node (>= 22) it runs on, both from npm, pinned by the lock file.
CONFORMANCE_STAMP := tests/conformance/node_modules/.installed

.PHONY: run test lint unit bench bench-quick bench-tools bench-profile bench-clients bench-sessions bench-start check-schema clean deploy-check conformance conformance-ci \
	lexicon-real-words \
	conformance-tools fuzz soak burst browser

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

$(CONFORMANCE_STAMP): tests/conformance/package.json tests/conformance/package-lock.json
	cd tests/conformance && npm ci --no-audit --no-fund --loglevel=error
	tests/conformance/node_modules/node/bin/node --version
	touch $(CONFORMANCE_STAMP)

# For `make test`: a failed install (no npm registry) is not fatal there; the conformance tests
# then skip and say why. `make conformance` and `make conformance-ci` need it and stop instead.
conformance-tools:
	@$(MAKE) --no-print-directory $(CONFORMANCE_STAMP) || { \
	  echo "**************************************************************************"; \
	  echo "WARNING: could not install Node 22 and the conformance suite (npm ci in"; \
	  echo "tests/conformance): the conformance tests will be skipped."; \
	  echo "**************************************************************************"; }

# The full table: every scenario at 2025-11-25 and 2026-07-28, reference server directly and
# through the gateway, client scenarios, npm server-everything; rewrites docs/protocol-support.md.
conformance: $(STAMP) $(NPM_STAMP) $(CONFORMANCE_STAMP)
	$(PY) tests/conformance/run.py --write-doc

# The CI subset: the elicitation scenarios of both eras (what tests/conformance runs under pytest).
conformance-ci: $(STAMP) $(CONFORMANCE_STAMP)
	$(PY) tests/conformance/run.py --scenarios elicitation

run: $(STAMP)
	$(PY) -m gateway.demo.run_demo

# Two workers (the CI machine's two cores): most tests wait on processes and sockets. A file's tests
# stay on one worker (--dist loadfile), so its module fixtures start their gateways once.
TEST_WORKERS ?= 2

test: $(STAMP) $(NPM_STAMP) conformance-tools lint browser
	rm -f .coverage .coverage.*
	$(PY) -m coverage run -m pytest -n $(TEST_WORKERS) --dist loadfile
	$(PY) -m coverage combine --quiet
	$(PY) -m coverage report --skip-empty --fail-under=85

unit: $(STAMP)
	$(PY) -m pytest tests/unit

lint: $(STAMP)
	$(VENV)/bin/ruff check gateway tests bench examples fuzz scripts
	$(VENV)/bin/mypy
	$(PY) -m gateway.policy.schema_export --check policies/schema.json
	$(PY) -m gateway.config_reference --check docs/configuration.md
	$(MAKE) --no-print-directory deploy-check

# deploy/: Kubernetes manifests and the compose file against the schemas bundled in the dev
# extras (no network), HAProxy's own config check, then tests/deploy (the files' rules and
# `elicitation-gateway check` on the configs they mount). HAProxy comes from Debian's packages:
# installed here when missing and we are root with apt-get; otherwise a loud warning and that
# one check is skipped.
K8S_MANIFESTS := $(filter-out deploy/kubernetes/kustomization.yaml,$(wildcard deploy/kubernetes/*.yaml))

deploy-check: $(STAMP)
	$(VENV)/bin/kubernetes-validate --strict --quiet $(K8S_MANIFESTS)
	@echo "deploy/kubernetes: $(words $(K8S_MANIFESTS)) manifests valid (kubernetes-validate --strict)"
	$(VENV)/bin/check-jsonschema --builtin-schema vendor.compose-spec deploy/docker-compose.yaml
	@if ! command -v haproxy >/dev/null 2>&1; then \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
	    echo "haproxy not found: installing Debian's haproxy package to check deploy/haproxy.cfg"; \
	    { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends haproxy >/dev/null; } \
	      || echo "apt-get could not install haproxy"; \
	  fi; \
	fi
	@if command -v haproxy >/dev/null 2>&1; then \
	  out=$$(haproxy -c -f deploy/haproxy.cfg 2>&1) || { echo "$$out"; exit 1; }; \
	  echo "deploy/haproxy.cfg: valid ($$(haproxy -v | head -n1 | cut -d' ' -f1-3); the gateway-N names resolve only inside compose)"; \
	else \
	  echo "**************************************************************************"; \
	  echo "WARNING: haproxy is not installed and could not be installed (needs root"; \
	  echo "and apt-get): deploy/haproxy.cfg was NOT checked. apt-get install haproxy"; \
	  echo "**************************************************************************"; \
	fi
	$(PY) -m pytest tests/deploy

# Headless Chromium for the /admin page test (driven by playwright-core from tests/npm). Installed
# from Debian's packages when missing and we are root with apt-get; otherwise that test is skipped
# and says why.
browser:
	@if [ ! -x /usr/bin/chromium ] && [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
	  echo "chromium not found: installing Debian's chromium package for the /admin page test"; \
	  { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends chromium >/dev/null; } \
	    || echo "apt-get could not install chromium: the /admin browser test will be skipped"; \
	fi
	@[ -x /usr/bin/chromium ] || echo "WARNING: no /usr/bin/chromium: the /admin browser test will be skipped"

# The benchmark's own virtualenv: FastMCP (the peer in the table) and py-spy, never in .venv. A failed
# install is not fatal: the FastMCP row then says why (bench/.venv/install.log).
BENCH_VENV := bench/.venv
BENCH_STAMP := $(BENCH_VENV)/.installed

$(BENCH_STAMP): bench/requirements.txt
	@command -v $(PYTHON) >/dev/null 2>&1 || { echo "need $(PYTHON) on PATH"; exit 1; }
	test -x $(BENCH_VENV)/bin/python || $(PYTHON) -m venv $(BENCH_VENV)
	@if $(BENCH_VENV)/bin/python -m pip install --quiet -r bench/requirements.txt >$(BENCH_VENV)/install.log 2>&1; then \
	  touch $(BENCH_STAMP); \
	else \
	  echo "WARNING: could not install bench/requirements.txt into $(BENCH_VENV) (see $(BENCH_VENV)/install.log)"; \
	fi

# wrk (Debian's package) sends the load; installed when missing and we are root with apt-get,
# otherwise the benchmark falls back to its aiohttp load generator and says so.
bench-tools: $(STAMP)
	@-$(MAKE) --no-print-directory $(BENCH_STAMP)
	@if ! command -v wrk >/dev/null 2>&1 && [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
	  echo "wrk not found: installing Debian's wrk package for the load runs"; \
	  { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends wrk >/dev/null; } \
	    || echo "apt-get could not install wrk: the aiohttp load generator is used instead"; \
	fi

# Side by side, interleaved, one table: direct, plain aiohttp forwarder, gateway (memory, Redis),
# FastMCP's proxy (docs/performance.md). bench-quick: the same table, fewer samples, under a minute.
bench: bench-tools
	$(PY) bench/run_benchmarks.py

bench-quick: bench-tools
	$(PY) bench/run_benchmarks.py --quick

# Where the gateway's time goes under load: py-spy (bench/.venv) samples it while wrk sends
# tools/call echo at concurrency 32; prints the top functions by own and inclusive time.
bench-profile: bench-tools
	$(PY) bench/profile_gateway.py --seconds 15 --out bench/.venv/gateway-stacks.txt

# Regenerates gateway/policy/data/lexicon/_real_words.json (everyday words read as themselves, never as a
# misspelt secret noun) from wordfreq's lists, installed here on demand: run it after changing the lexicon.
lexicon-real-words: $(STAMP)
	$(PY) -m pip install --quiet 'wordfreq==3.1.1'
	$(PY) scripts/lexicon_real_words.py

# One upstream POST and one session load, library against the gateway's lean path, in processes of their own.
bench-clients: $(STAMP)
	$(PY) bench/client_costs.py

# Session figures only: 10,000 idle sessions against the gateway and a plain aiohttp forwarder.
bench-sessions: $(STAMP)
	$(PY) bench/sessions.py

# Start to listening with the policy lexicon built and read from the opt-in cache (docs/operations.md).
bench-start: $(STAMP)
	$(PY) bench/start_time.py

# Coverage-guided fuzzing (atheris) of every target in fuzz/targets.py, FUZZ_SECONDS each.
# A crash is written to fuzz/regressions/ (commit it: tests/fuzz replays it in every run).
FUZZ_SECONDS ?= 120
fuzz: $(STAMP)
	@for t in jsonrpc sse core policy; do \
	  echo "== fuzz target $$t ($(FUZZ_SECONDS) s)"; \
	  $(PY) -m fuzz.run $$t -max_total_time=$(FUZZ_SECONDS) -timeout=10 -rss_limit_mb=2048 || exit 1; \
	done

# Mixed traffic across many sessions for SOAK_SECONDS (default 10 minutes), then memory, open
# connections, file descriptors and errors: they must stay flat, errors at zero. Not in CI.
SOAK_SECONDS ?= 600
soak: $(STAMP)
	$(PY) bench/soak.py --seconds $(SOAK_SECONDS)

# One server bursting at 10x while another's latency is measured (a longer run of the CI check).
burst: $(STAMP)
	$(PY) bench/burst.py --seconds 30

clean:
	rm -rf $(VENV) .coverage .mypy_cache .ruff_cache

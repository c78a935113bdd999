# Two commands: `make demo` and `make test`. Everything they need is installed from this
# repository's own files into .venv (Python) and .tools (Node packages).
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed

NODE_TOOLS := .tools/node/node_modules/kinesis-local/main.js

.PHONY: ui services demo test test-fast test-alone test-chaos test-deploy lint docs docs-build venv tools lock bench clean

demo: venv $(NODE_TOOLS)
	$(BIN)/python -m devtools.demo

# The demo's broker, Kinesis server and schema registry again, on the ports its connections
# name, for the streamslice commands that read them (Ctrl-C stops them).
services: venv $(NODE_TOOLS)
	$(BIN)/python -m devtools.demo --services

# The Airflow api-server over the demo's database: the Streamslice page on port 8080.
ui: venv
	$(BIN)/python -m devtools.ui

# Lint and type-check first: either failing fails the test run, as does a run that collects
# no tests (pytest's exit 5). The suite runs on TEST_WORKERS processes (pytest-xdist; the
# grouping is in tests/conftest.py); TEST_WORKERS=0 runs it in this one process. Three on two
# cores: much of a test's time is spent waiting on a service, and on a busy machine three
# processes get a larger share of it (measured in docs/development.md).
TEST_WORKERS ?= 3
XDIST = -n $(TEST_WORKERS) --dist loadgroup

test: venv tools lint docs-build
	$(BIN)/python -m pytest $(XDIST)

# The unit tests alone (pure logic, no services): seconds.
test-fast: venv
	$(BIN)/python -m pytest -q tests/unit

# Every test passes alone, not only after the tests before it (devtools/alone.py): the unit
# tests twice in a shuffled order, then each test file in a pytest process of its own (each
# test alone in a file with state wider than one test), a failure run again to tell load from
# order. Hours on a busy machine: not part of `make test`.
test-alone: venv tools
	$(BIN)/python -m devtools.alone --shuffled 2 tests/unit; status=$$?; \
	  $(BIN)/python -m devtools.alone tests/unit tests/integration tests/chaos || status=1; \
	  exit $$status

# Process kills at every phase of a run, then recovery (also part of `make test`).
test-chaos: venv
	$(BIN)/python -m pytest -q -m chaos $(XDIST)

# Airflow deployed as teams run it (tests/integration/test_celery_deployment.py): the
# CeleryExecutor with Redis, PostgreSQL, two workers that share no disk, output on S3, worker
# kills (also part of `make test`).
test-deploy: venv tools
	$(BIN)/python -m pytest -q -m deploy $(XDIST)

lint: venv
	$(BIN)/ruff check .
	$(BIN)/mypy

# The documentation site (mkdocs.yml, docs/*.md): `make docs` serves it while you edit it
# (DOCS_PORT, default 8000); `make test` first builds it in strict mode into a throw-away
# folder, so a broken link, a missing anchor or a page left out of the navigation fails.
DOCS_PORT ?= 8000
docs: venv
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs serve -a 127.0.0.1:$(DOCS_PORT)

docs-build: venv
	site=$$(mktemp -d) && NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict --site-dir "$$site"; \
	  status=$$?; rm -rf "$$site"; exit $$status

# Debian packages the tests and the benchmark use (a headless browser for the UI test, kcat
# as a benchmark baseline, PostgreSQL for the Iceberg catalog test and the Celery deployment
# test, Redis as that test's Celery broker), and the pinned Node packages (the local Kinesis
# server).
tools: $(NODE_TOOLS)
	@missing=""; \
	command -v chromium >/dev/null || missing="$$missing chromium"; \
	command -v kcat >/dev/null || missing="$$missing kcat"; \
	command -v pg_lsclusters >/dev/null || missing="$$missing postgresql"; \
	command -v redis-server >/dev/null || missing="$$missing redis-server"; \
	if [ -n "$$missing" ]; then \
	  echo "installing$$missing"; \
	  apt-get install -y -q $$missing >/dev/null 2>&1 || \
	  { apt-get update -q >/dev/null && apt-get install -y -q $$missing >/dev/null; }; \
	fi

$(NODE_TOOLS): devtools/node/package.json devtools/node/package-lock.json
	mkdir -p .tools/node
	cp devtools/node/package.json devtools/node/package-lock.json .tools/node/
	cd .tools/node && npm ci --no-audit --no-fund --loglevel=error
	touch $@

venv: $(STAMP)

$(STAMP): requirements.txt constraints.txt pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q -r requirements.txt -c constraints.txt
	$(BIN)/python -m pip install -q --no-deps -e .
	touch $@

# Re-resolve the top-level pins and freeze the result (run after editing requirements.txt).
lock:
	$(BIN)/python -m pip install -q -r requirements.txt
	$(BIN)/python -m pip freeze --exclude-editable | grep -v '^-e ' > constraints.txt

bench: venv tools
	$(BIN)/python bench/kafka_bounded_read.py
	$(BIN)/python bench/lake_commit.py --end-to-end
	$(BIN)/python bench/read_cpu.py --end-to-end
	$(BIN)/python bench/kinesis_read.py
	$(BIN)/python bench/many_splits.py --rounds 3
	$(BIN)/python bench/backfill.py --intervals 48
	$(BIN)/python bench/backfill.py --intervals 168
	$(BIN)/python bench/run_overhead.py
	$(BIN)/python bench/peers.py

clean:
	rm -rf .demo output

# Two commands on a fresh machine: `make run` serves on SQLite, `make test` runs every test.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
# The venv's pip as the interpreter brought it (never upgraded first): the lock installs with it as with the newest.
PIP := PIP_DISABLE_PIP_VERSION_CHECK=1 $(PY) -m pip
STAMP := $(VENV)/.installed-stamp
HOST ?= 127.0.0.1
PORT ?= 8000
# -n: parallel processes; loadfile keeps a module's tests (and their servers) in one process.
PYTEST := $(PY) -m pytest -q -n 2 --dist loadfile

.PHONY: run test lint test-sqlite test-postgres fuzz bench install lock migrate demo clean

# Exactly the versions of uv.lock: its export pins every package with its hashes (the server's, the test
# extra's and the client's), so pip resolves nothing; then the server and the client library (with
# invoicing-cli, tested against the server) as editable installs, their dependencies being in the lock.
$(STAMP): pyproject.toml clients/python/pyproject.toml requirements.lock.txt
	@$(PYTHON) -c 'import sys; sys.exit(sys.version_info < (3, 11))' || \
		{ echo "Python 3.11 or newer is needed: make PYTHON=python3.11 ..."; exit 1; }
	$(PYTHON) -m venv $(VENV)
	$(PIP) install --quiet --require-hashes -r requirements.lock.txt
	$(PIP) install --quiet --no-deps -e . -e clients/python
	touch $(STAMP)

install: $(STAMP)

# After changing a dependency in a pyproject.toml: uv.lock and the requirements files again, keeping the
# pins that still fit. LOCK_ARGS=--upgrade takes the newest allowed versions, LOCK_ARGS="--upgrade-package
# httpx" one package's. `make lint` fails while the lock and the pyproject.toml files disagree.
lock: install
	scripts/lock $(LOCK_ARGS)

migrate: install
	$(VENV)/bin/invoicing db upgrade

# `serve` applies pending migrations itself; the default database is ./var/invoicing.db.
run: install
	$(VENV)/bin/invoicing serve --host $(HOST) --port $(PORT)

demo: install
	$(VENV)/bin/invoicing demo

# SQLite always; PostgreSQL too when INVOICING_TEST_POSTGRES_URL names a server.
# pytest's own exit codes pass through, so "no tests collected" (5) fails too.
test: install
	scripts/test-prerequisites
	$(MAKE) --no-print-directory lint
	$(MAKE) --no-print-directory test-sqlite
	@if [ -n "$$INVOICING_TEST_POSTGRES_URL" ]; then $(MAKE) --no-print-directory test-postgres; \
	else echo "INVOICING_TEST_POSTGRES_URL not set: PostgreSQL pass skipped"; fi

# ruff (style, import order, unused code), the import contracts of the layering, and the lock in step
# with the pyproject.toml files.
lint: install
	$(VENV)/bin/ruff check .
	$(VENV)/bin/lint-imports
	scripts/lock --check

test-sqlite: install
	env -u INVOICING_TEST_DATABASE_URL $(PYTEST)

test-postgres: install
	$(PY) scripts/with-fresh-postgres.py -- $(PYTEST)

# Long property-based runs (tests marked `fuzz`: hostile input to every operation and tool, the
# OpenAPI fuzz, stateful chains), on SQLite and, when set, PostgreSQL. `make test` runs them bounded.
FUZZ_EXAMPLES ?= 500
fuzz: install
	INVOICING_TEST_FUZZ_EXAMPLES=$(FUZZ_EXAMPLES) env -u INVOICING_TEST_DATABASE_URL $(PYTEST) -m fuzz
	@if [ -n "$$INVOICING_TEST_POSTGRES_URL" ]; then INVOICING_TEST_FUZZ_EXAMPLES=$(FUZZ_EXAMPLES) \
		$(PY) scripts/with-fresh-postgres.py -- $(PYTEST) -m fuzz; fi

# Throughput and latency against a bare Starlette baseline, memory, two processes and data growth,
# written to docs/performance.md with plots (needs wrk; PostgreSQL too when INVOICING_TEST_POSTGRES_URL
# or BENCH_POSTGRES_URL names a server). About 20 minutes; BENCH_ARGS="--repeats 1 --growth 10000"
# for a quick look (python -m bench.run --help).
BENCH_STAMP := $(VENV)/.bench-stamp
$(BENCH_STAMP): $(STAMP) requirements-bench.lock.txt
	$(PIP) install --quiet --require-hashes -r requirements-bench.lock.txt
	touch $(BENCH_STAMP)

bench: $(BENCH_STAMP)
	@command -v wrk >/dev/null || { [ "$$(id -u)" = 0 ] && apt-get install -y -qq wrk >/dev/null; } || \
		{ echo "make bench needs wrk: apt-get install wrk"; exit 1; }
	$(PY) -m bench.run $(BENCH_ARGS)

clean:
	rm -rf $(VENV) var

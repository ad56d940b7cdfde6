# Two commands on a fresh machine: `make run` serves on SQLite, `make test` runs every test.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed-stamp

.PHONY: run test test-sqlite test-postgres install demo clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[test]'
	touch $(STAMP)

install: $(STAMP)

run: install
	$(VENV)/bin/invoicing serve

demo: install
	$(VENV)/bin/invoicing demo

# SQLite always; PostgreSQL too when INVOICING_TEST_POSTGRES_URL names a server.
test: install
	scripts/test-prerequisites
	$(MAKE) --no-print-directory test-sqlite
	@if [ -n "$$INVOICING_TEST_POSTGRES_URL" ]; then $(MAKE) --no-print-directory test-postgres; \
	else echo "INVOICING_TEST_POSTGRES_URL not set: PostgreSQL pass skipped"; fi

test-sqlite: install
	$(PY) -m pytest -q -n 2 --dist loadfile

test-postgres: install
	$(PY) scripts/with-fresh-postgres.py -- $(PY) -m pytest -q -n 2 --dist loadfile

clean:
	rm -rf $(VENV) var

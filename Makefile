# Everything runs from the project venv; a fresh machine needs only python3 >= 3.11 and make.
PYTEST_ARGS ?=
VENV := .venv
PY := $(VENV)/bin/python

.PHONY: run test e2e bench lint messages

# Two markers: `make run` installs only what the product needs (.installed); the test, browser and
# lint targets add the dev tools (.dev-installed). A venv made by `make run` gets them on the
# first `make test`; either marker is redone when pyproject.toml changes.
$(VENV)/.installed: pyproject.toml
	python3 -m venv $(VENV) && $(VENV)/bin/pip install -e . && touch $@

$(VENV)/.dev-installed: pyproject.toml $(VENV)/.installed
	$(VENV)/bin/pip install -e '.[dev]' && touch $@

run: $(VENV)/.installed
	$(PY) scripts/run.py

# The translations: locale/*/LC_MESSAGES/*.po -> .mo (build output, not in git). scripts/run.py and
# the test session compile them too; here so that CI (.ci/run calls make test and make e2e) says so.
messages: $(VENV)/.installed
	$(PY) scripts/messages.py

# The official AG-UI client that tests/integration/test_agui_client.py drives; reinstalled when the lock
# file changes (npm writes node_modules/.package-lock.json on every install). Without npm the
# test skips itself with the reason.
AGUI_CLIENT := tests/agui_client
$(AGUI_CLIENT)/node_modules/.package-lock.json: $(AGUI_CLIENT)/package.json $(AGUI_CLIENT)/package-lock.json
	@if command -v npm >/dev/null 2>&1; then cd $(AGUI_CLIENT) && npm ci --no-audit --no-fund; \
	else echo "npm not found: tests/integration/test_agui_client.py will be skipped"; fi

# The stock MCP filesystem server (npm) that tests/mcp_servers and tests/integration/test_mcp_servers.py
# start over stdio, installed the same way; without npm those tests skip (on CI, CI=true, they fail).
MCP_FS := tests/mcp_fs
$(MCP_FS)/node_modules/.package-lock.json: $(MCP_FS)/package.json $(MCP_FS)/package-lock.json
	@if command -v npm >/dev/null 2>&1; then cd $(MCP_FS) && npm ci --no-audit --no-fund; \
	else echo "npm not found: the tests with @modelcontextprotocol/server-filesystem will be skipped"; fi

# Microsoft Agent Framework in a venv of its own: its AG-UI client, which
# tests/integration/test_maf_client.py drives, and its AG-UI server, the peer `make bench` compares
# with (bench/peer_app.py). agent-framework-ag-ui 1.7 needs ag-ui-protocol<0.2, the project >=1.0.
# Rebuilt when the pins change; if it cannot be built the test skips saying why (on CI it fails)
# and the bench measures without the peer, saying so.
MAF_VENV := .venv-maf
$(MAF_VENV)/.installed: tests/maf_client/requirements.txt
	@rm -f $@; if python3 -m venv $(MAF_VENV) && $(MAF_VENV)/bin/pip install -q -r $<; then touch $@; \
	else echo "could not build $(MAF_VENV): tests/integration/test_maf_client.py and the bench's peer will be skipped"; fi

# devstack exec starts an embedded Redis when REDIS_URL is unset.
test: $(VENV)/.dev-installed messages $(AGUI_CLIENT)/node_modules/.package-lock.json $(MCP_FS)/node_modules/.package-lock.json $(MAF_VENV)/.installed
	$(PY) scripts/devstack.py exec -- $(PY) -m pytest -m "not e2e" $(PYTEST_ARGS)

# Browser tests get their own pytest process: pytest-playwright's sync API leaves an event loop
# running, after which ORM calls raise SynchronousOnlyOperation and pytest-asyncio tests fail.
e2e: $(VENV)/.dev-installed messages
	$(PY) scripts/devstack.py exec -- $(PY) -m pytest -m e2e tests/e2e $(PYTEST_ARGS)

$(VENV)/.bench-installed: pyproject.toml $(VENV)/.dev-installed
	$(VENV)/bin/pip install -e '.[dev,bench]' && touch $@

# BENCH_ARGS=--quick for a short run; DATABASE_URL=postgres://... to measure on PostgreSQL;
# BENCH_ARGS=--scale for 1 web + 1 worker against 2 + 2 (needs DATABASE_URL=postgres://...).
BENCH_ARGS ?=
bench: $(VENV)/.bench-installed $(MAF_VENV)/.installed
	$(PY) bench/run.py $(BENCH_ARGS)

lint: $(VENV)/.dev-installed
	$(VENV)/bin/ruff check .

# flex.plane: `make dev` runs the embedded default, `make test` runs every test.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
# Reinstall whenever the declared dependencies change.
STAMP := $(VENV)/.installed-$(shell cat pyproject.toml 2>/dev/null | cksum | cut -d' ' -f1)

.PHONY: dev test lint format protos schema install clean

$(STAMP): pyproject.toml
	@$(PYTHON) -c 'import sys; sys.exit(sys.version_info < (3, 11))' || \
		{ echo "flex.plane needs Python >= 3.11 (PYTHON=$(PYTHON))"; exit 1; }
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	rm -f $(VENV)/.installed-*
	touch $@

install: $(STAMP)

dev: $(STAMP)
	$(BIN)/python -m devstack

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy .

test: lint
	$(BIN)/python manage.py check
	DJANGO_SETTINGS_MODULE=flexplane.settings.production FLEXPLANE_SECRET_KEY=check-deploy-$$RANDOM$$RANDOM$$RANDOM$$RANDOM-not-a-real-secret-key-just-long-enough \
		FLEXPLANE_ALLOWED_HOSTS=flexplane.example.com $(BIN)/python manage.py check --deploy --fail-level WARNING
	$(BIN)/pytest

format: $(STAMP)
	$(BIN)/ruff format .
	$(BIN)/ruff check --fix .

protos: $(STAMP)
	$(BIN)/python scripts/gen_protos.py

schema: $(STAMP)
	$(BIN)/python scripts/export_schema.py

clean:
	rm -rf $(VENV) .devstack .scratch .pytest_cache .mypy_cache .ruff_cache

# flex.plane: `make dev` runs the embedded default, `make test` runs every test.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
# Reinstall whenever the declared dependencies change.
STAMP := $(VENV)/.installed-$(shell cat pyproject.toml 2>/dev/null | cksum | cut -d' ' -f1)
# The portal's CSS: Tailwind through django-tailwind, built with npm; rebuilt when a page or the lock changes.
THEME := portal/theme/static_src
NODE_STAMP := $(THEME)/node_modules/.installed
CSS := portal/theme/static/css/dist/styles.css
CSS_SOURCES := $(THEME)/src/styles.css $(shell find templates portal static -name node_modules -prune -o \
	\( -name '*.html' -o -name '*.py' -o -name '*.js' \) -print 2>/dev/null)
# The browser tests drive Debian's chromium (never a browser a test tool downloads).
CHROMIUM := /usr/bin/chromium
SUDO := $(if $(filter 0,$(shell id -u)),,sudo)
SCREENSHOTS := $(CURDIR)/.scratch/screenshots

.PHONY: dev test lint format protos schema install clean

$(STAMP): pyproject.toml
	@$(PYTHON) -c 'import sys; sys.exit(sys.version_info < (3, 11))' || \
		{ echo "flex.plane needs Python >= 3.11 (PYTHON=$(PYTHON))"; exit 1; }
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	rm -f $(VENV)/.installed-*
	touch $@

$(NODE_STAMP): $(THEME)/package-lock.json
	cd $(THEME) && npm ci --no-audit --no-fund
	touch $@

$(CSS): $(NODE_STAMP) $(CSS_SOURCES) | $(STAMP)
	$(BIN)/python manage.py tailwind build

$(CHROMIUM):
	$(SUDO) apt-get update -qq
	$(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium

install: $(STAMP) $(CSS) $(CHROMIUM)

dev: $(STAMP) $(CSS)
	$(BIN)/python -m devstack

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy .

test: lint $(CSS) $(CHROMIUM)
	$(BIN)/python manage.py check
	DJANGO_SETTINGS_MODULE=flexplane.settings.production FLEXPLANE_SECRET_KEY=check-deploy-$$RANDOM$$RANDOM$$RANDOM$$RANDOM-not-a-real-secret-key-just-long-enough \
		FLEXPLANE_ALLOWED_HOSTS=flexplane.example.com $(BIN)/python manage.py check --deploy --fail-level WARNING
	$(BIN)/pytest; status=$$?; echo "Screenshots of the portal: $(SCREENSHOTS)"; exit $$status

format: $(STAMP)
	$(BIN)/ruff format .
	$(BIN)/ruff check --fix .

protos: $(STAMP)
	$(BIN)/python scripts/gen_protos.py

schema: $(STAMP)
	$(BIN)/python scripts/export_schema.py

clean:
	rm -rf $(VENV) .devstack .scratch .pytest_cache .mypy_cache .ruff_cache $(THEME)/node_modules portal/theme/static

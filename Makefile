# flex.plane: `make dev` runs the embedded default, `make test` runs every test.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
# Python caches bytecode here even where the environment turns it off (PYTHONDONTWRITEBYTECODE, as on
# this project's machines): without the cache every process the tests start compiles the project's
# sources again, and every pytest worker rewrites the asserts of every test module again.
unexport PYTHONDONTWRITEBYTECODE
# The project's packages are installed by uv (itself from PyPI, by pip, at one version): a fresh venv
# takes 13 s against pip's 42 s here, byte-compiled as pip does, and make test's wall time counts the
# install. It trusts the system's certificate store (--system-certs): behind a proxy with a CA of its
# own, as on these machines, uv's built-in roots would refuse PyPI.
UV := uv==0.13.9
# Every install takes exactly the versions in LOCK, the last ones tested: pyproject.toml says what the
# project accepts, the lock what it runs (the whole closure, for every Python and platform it supports).
# A release on PyPI changes nothing until `make lock` (new requirements, the pins kept) or `make upgrade`
# (everything at its newest) writes the lock anew and the stubs from its grpcio-tools; commit the three.
# The image's and the agent package's builds install with the same lock as pip constraints (packaging/).
LOCK := requirements.lock
LOCK_COMPILE = $(BIN)/uv pip compile --quiet --system-certs --universal --python-version 3.11 --extra dev \
	--no-annotate --custom-compile-command 'make lock' -o $(LOCK) pyproject.toml
# Reinstall whenever the declared dependencies or the lock change.
STAMP := $(VENV)/.installed-$(shell cat pyproject.toml $(LOCK) 2>/dev/null | cksum | cut -d' ' -f1)
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
# make test's wall time counts from the moment make starts: lint, types and the checks included.
STARTED := $(shell date +%s)
# Every test once: all but those marked alone in parallel (pytest-xdist; each worker brings up its own
# world on subnets of its own, tests/addresses.py), then those alone: the load suite, which saturates the
# machine, and bursts whose deadlines count on having it (tests/alone.py; the run alone imports only
# those modules). The promises and figures of both runs are
# summed up at the end (tests/promises.py).
PYTEST_WORKERS ?= 3
PYTEST_PARALLEL := -n $(PYTEST_WORKERS) --dist loadscope --durations=15
PROMISES := $(CURDIR)/.scratch/promises.json
LINT_LOG := $(CURDIR)/.scratch/lint.log

# The artifacts an operator installs (packaging/): the agent's .deb and the orchestrator's OCI image,
# built here without a container engine into BUILD (git-ignored; debootstrap roots are cached there).
BUILD := $(CURDIR)/.build
ARTIFACT_TOOLS := /usr/sbin/debootstrap /usr/bin/lintian /usr/bin/umoci /usr/bin/strip /usr/bin/apt-ftparchive \
	/usr/bin/gpg /usr/bin/systemd-nspawn

.PHONY: dev test test-full durations lint format protos lock upgrade schema install clean deb apt-repo image \
	test-artifacts capi-components pin-images

$(BIN)/uv:
	@$(PYTHON) -c 'import sys; sys.exit(sys.version_info < (3, 11))' || \
		{ echo "flex.plane needs Python >= 3.11 (PYTHON=$(PYTHON))"; exit 1; }
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet '$(UV)'

$(STAMP): pyproject.toml $(LOCK) | $(BIN)/uv
	$(BIN)/uv pip install --quiet --system-certs --python $(BIN)/python --compile-bytecode \
		--constraints $(LOCK) -e '.[dev]'
	rm -f $(VENV)/.installed-*
	touch $@

$(NODE_STAMP): $(THEME)/package-lock.json
	cd $(THEME) && npm ci --no-audit --no-fund
	touch $@

$(CSS): $(NODE_STAMP) $(CSS_SOURCES) | $(STAMP)
	$(BIN)/python manage.py tailwind build

# The Debian packages the tests need, installed in one apt-get run (concurrent runs would contend for
# dpkg's lock): Debian's chromium for the browser tests; userspace WireGuard for the mesh's namespace tests
# (tests/mesh) and `make dev` as root, nftables for the edge gateways' (tests/gateway); the CNCF
# distribution registry for agent releases (tests/agent/*registry*, the devstack), which the tests start
# on loopback (never the package's service); PostgreSQL for the identity database's dump and restore
# (tests/orchestrator/test_identity_backup.py), a throwaway server of the test's own; etcd for the tenant
# control planes' snapshots and restore (tests/orchestrator/test_etcd_backup.py), members of the test's
# own (never the package's service); systemd's system call groups (systemd-analyze) and libseccomp for
# the agent unit's sandbox, under which the devstack runs every agent (devstack/sandbox.py); xfsprogs for
# the CSI node plugin's file systems (tests/providers/csi, ext4's tools are Debian's own). Without their
# recommends, which would bring a kernel image and initramfs (wireguard-tools'), avahi and printer tools
# (chromium's) onto a developer's machine: what they need is named (chromium's fonts; debootstrap's
# archive keyring, to check what it fetches).
WIREGUARD := /usr/bin/wg /usr/bin/wireguard-go /usr/sbin/nft
REGISTRY := /usr/bin/docker-registry
POSTGRESQL := /usr/bin/pg_ctlcluster
ETCD := /usr/bin/etcd /usr/bin/etcdctl
SANDBOX := /usr/bin/systemd-analyze
XFS := /usr/sbin/mkfs.xfs
DEBIAN_TOOLS := $(CHROMIUM) $(WIREGUARD) $(REGISTRY) $(POSTGRESQL) $(ETCD) $(SANDBOX) $(XFS)

$(DEBIAN_TOOLS) &:
	$(SUDO) apt-get update -qq
	$(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq \
		--no-install-recommends chromium fonts-liberation wireguard-tools wireguard-go nftables docker-registry \
		postgresql etcd-server etcd-client systemd libseccomp2 xfsprogs
	-$(SUDO) systemctl disable --now docker-registry.service postgresql.service etcd.service 2>/dev/null

$(ARTIFACT_TOOLS):
	$(SUDO) apt-get update -qq
	$(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
		debootstrap debian-archive-keyring lintian umoci binutils apt-utils gpg systemd-container

install: $(STAMP) $(CSS) $(DEBIAN_TOOLS)

dev: $(STAMP) $(CSS) $(REGISTRY)
	$(BIN)/python -m devstack

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy .

# What is missing is installed first, concurrently (uv, npm and apt-get). Lint and types run beside the
# parallel run; their output follows that run's, and they are done before the modules that need the
# machine to themselves start.
test:
	$(MAKE) --no-print-directory -j4 install
	$(BIN)/python manage.py check
	DJANGO_SETTINGS_MODULE=flexplane.settings.production FLEXPLANE_SECRET_KEY=check-deploy-$$RANDOM$$RANDOM$$RANDOM$$RANDOM-not-a-real-secret-key-just-long-enough \
		FLEXPLANE_ALLOWED_HOSTS=flexplane.example.com $(BIN)/python manage.py check --deploy --fail-level WARNING
	rm -f $(PROMISES) && mkdir -p $(dir $(LINT_LOG))
	$(MAKE) --no-print-directory lint > $(LINT_LOG) 2>&1 & lint=$$!; \
	$(BIN)/pytest $(PYTEST_PARALLEL) -m "not alone" --promises-ledger=$(PROMISES) $(PYTEST_EXTRA); status=$$?; \
	wait $$lint || status=$$?; cat $(LINT_LOG); \
	$(BIN)/pytest -p no:xdist -m alone --promises-ledger=$(PROMISES) $(PYTEST_EXTRA) \
		$$($(BIN)/python -m tests.alone) || status=$$?; \
	echo "Screenshots of the portal: $(SCREENSHOTS)"; \
	echo "make test: $$(( $$(date +%s) - $(STARTED) )) s"; exit $$status

# The parallel run's order (tests/schedule.py): each module's time in a parallel run, kept in
# tests/durations.json; worth writing anew when modules were added or got much faster or slower.
durations: $(STAMP) $(CSS)
	$(BIN)/pytest $(PYTEST_PARALLEL) -m "not alone" --record-durations tests/durations.json

# make test, with the timing probes of the isolation suites taking all their rounds (one by default).
test-full: PYTEST_EXTRA := --timing-full
test-full: test

format: $(STAMP)
	$(BIN)/ruff format .
	$(BIN)/ruff check --fix .

protos: $(STAMP)
	$(BIN)/python scripts/gen_protos.py

# The lock, written anew on purpose (see LOCK above), then installed and the stubs regenerated.
lock: | $(BIN)/uv
	$(LOCK_COMPILE)
	$(MAKE) --no-print-directory protos

upgrade: | $(BIN)/uv
	$(LOCK_COMPILE) --upgrade
	$(MAKE) --no-print-directory protos

# schema.graphql from the code, then the typed API client generated from it (apiclient/generated/).
schema: $(STAMP)
	$(BIN)/python scripts/export_schema.py
	$(BIN)/python scripts/gen_apiclient.py

# flexplane-agent_<version>_amd64.deb in $(BUILD) (packaging/build_deb.py).
deb: $(STAMP) | $(ARTIFACT_TOOLS)
	$(BIN)/python packaging/build_deb.py --out $(BUILD)

# The signed apt repository of the agent's packages in $(APT_REPO), this build's package added to those
# published before (packaging/build_apt_repo.py): APT_SIGNING_KEY names the gpg key that signs it.
APT_REPO ?= $(BUILD)/apt
apt-repo: $(STAMP) | $(ARTIFACT_TOOLS)
	@test -n "$(APT_SIGNING_KEY)" || { echo "make apt-repo needs APT_SIGNING_KEY=<gpg key id>"; exit 2; }
	deb=$$($(BIN)/python packaging/build_deb.py --out $(BUILD) | tail -1) && \
	$(BIN)/python packaging/build_apt_repo.py --repo $(APT_REPO) --signing-key "$(APT_SIGNING_KEY)" --deb $$deb

# The orchestrator's image, an OCI layout in $(BUILD)/image/oci (packaging/build_image.py).
image: $(STAMP) $(CSS) | $(ARTIFACT_TOOLS)
	$(SUDO) $(BIN)/python packaging/build_image.py --build $(BUILD)

# The Cluster API providers as clusterctl installs them (packaging/build_capi_components.py): a clusterctl
# local repository in $(BUILD)/capi, <provider>/v<version>/ with metadata.yaml, the components and the
# cluster template, rendered from charts/providers. A clusterctl.yaml names them (docs/kubernetes.md).
capi-components: $(STAMP)
	$(BIN)/python packaging/build_capi_components.py --out $(BUILD)/capi

# The third-party images' digests (packaging/pin_images.py), where their registries answer: each image
# packaging/images.py declares (the hosted control planes', the tenant clusters' addons', Zitadel's and
# PostgreSQL's) resolved by tag to its multi-arch index's digest and written to providers/images.lock.json,
# which the image ships and the providers pin with; Zitadel's and PostgreSQL's into charts/identity/values.yaml
# too. Commit both. PIN_IMAGES_FLAGS passes more: --kubernetes v1.35.0 (pin another version's components),
# --mirror host[:port][/path] --ca-file ca.pem (an air-gapped site's mirror), --username/--password-file.
PIN_IMAGES_FLAGS ?=
pin-images: $(STAMP)
	$(BIN)/python packaging/pin_images.py $(PIN_IMAGES_FLAGS)

# Both artifacts built, then checked and run (tests/artifacts, which make test does not collect): the .deb
# installed, upgraded and purged in minimal Debian 12 and 13 roots, the image started and probed.
test-artifacts: $(STAMP) $(CSS) | $(ARTIFACT_TOOLS)
	@started=$$(date +%s); \
	deb=$$($(BIN)/python packaging/build_deb.py --out $(BUILD) | tail -1) && \
	$(SUDO) $(BIN)/python packaging/build_image.py --build $(BUILD) && \
	$(SUDO) env FLEXPLANE_DEB=$$deb FLEXPLANE_IMAGE=$(BUILD)/image/oci $(BIN)/pytest -p no:xdist -v -s tests/artifacts; \
	status=$$?; echo "make test-artifacts: $$(( $$(date +%s) - $$started )) s"; exit $$status

clean:
	rm -rf $(VENV) $(BUILD) .devstack .scratch .pytest_cache .mypy_cache .ruff_cache $(THEME)/node_modules portal/theme/static

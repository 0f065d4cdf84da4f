#!/bin/sh
# The orchestrator image's root filesystem, from Debian's packages and the app's wheel.
#
#     rootfs.sh SRC OUT
#
# SRC is a flex.plane checkout with the portal's CSS built (make); OUT (a new folder) becomes the
# image's whole root filesystem. Both builds run this same script: `make image` (packaging/
# build_image.py, which gives it a cached debootstrap root in FLEXPLANE_BASE_ROOT) and the
# Containerfile's rootfs stage, so both images hold the same files. Runs as root; reaches Debian's
# archive and PyPI only.
#
# In OUT: Debian 12 minbase with python3, ca-certificates and the mesh hub's tools (debootstrap);
# /opt/flexplane/venv, a venv on Debian's python3 with the app's wheel and its locked dependencies (pip,
# inside the root, so every compiled file matches the image's Python); the project templates beside the
# installed packages (where the settings look for them); the collected static files in
# /opt/flexplane/static; the user flexplane (10001). Then out go pip, apt, dpkg's programs,
# documentation and caches.
set -eu

SRC=$(cd "$1" && pwd)
OUT=$2
SUITE=bookworm
# The mesh hub (python -m django mesh_hub, from this image) calls ip and wg, and wireguard-go where the
# node's kernel has no WireGuard.
PACKAGES=python3,python3-venv,ca-certificates,iproute2,wireguard-tools,wireguard-go
MIRROR=${FLEXPLANE_DEBIAN_MIRROR:-http://deb.debian.org/debian}
VENV=/opt/flexplane/venv
UID_GID=10001

CSS=portal/theme/static/css/dist/styles.css
if [ ! -f "$SRC/$CSS" ]; then
    echo "rootfs.sh: $SRC/$CSS is missing: build the portal's CSS first (make)" >&2
    exit 1
fi
if [ -e "$OUT" ]; then
    echo "rootfs.sh: $OUT exists: give a new folder" >&2
    exit 1
fi

if [ -n "${FLEXPLANE_BASE_ROOT:-}" ]; then
    cp -a "$FLEXPLANE_BASE_ROOT" "$OUT"   # the same debootstrap, made earlier and cached
else
    debootstrap --variant=minbase --include=$PACKAGES $SUITE "$OUT" "$MIRROR" >/dev/null
fi

# The app's sources: what its wheel is built from, and the templates and static files beside it.
mkdir -p "$OUT/tmp/src"
tar -C "$SRC" --exclude=__pycache__ --exclude=static_src -cf - \
    pyproject.toml requirements.lock README.md flexplane orchestrator portal providers agent agentclient apiclient \
    templates static |
    tar -C "$OUT/tmp/src" -xf -
if [ ! -f "$OUT/tmp/src/$CSS" ]; then
    echo "rootfs.sh: $CSS went away while copying (is the CSS being rebuilt?): run it again" >&2
    exit 1
fi
cp /etc/resolv.conf "$OUT/etc/resolv.conf"
# pip inside trusts what the build environment trusts (a proxy's CA, say); the file goes afterwards.
cp /etc/ssl/certs/ca-certificates.crt "$OUT/tmp/build-ca.crt"

chroot "$OUT" /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/root LANG=C.UTF-8 \
    PIP_NO_CACHE_DIR=1 PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_ROOT_USER_ACTION=ignore PIP_CERT=/tmp/build-ca.crt \
    /bin/sh -eu <<INSIDE
python3 -m venv $VENV
$VENV/bin/pip wheel --quiet --no-deps -w /tmp/wheels /tmp/src
# No byte-code: the image's root is read-only and a compiled copy of every module would double the
# venv (the orchestrator starts about a second later, compiling what it imports in memory).
# Its dependencies at the versions the project's tests ran with (make lock), not the newest.
$VENV/bin/pip install --quiet --no-compile --constraint /tmp/src/requirements.lock /tmp/wheels/flexplane-*.whl
SITE=\$($VENV/bin/python -c 'import sysconfig; print(sysconfig.get_path("purelib"))')
# BASE_DIR in the settings is the folder holding the flexplane package: its templates go there.
cp -a /tmp/src/templates "\$SITE/templates"
cp -a /tmp/src/static "\$SITE/static"
mkdir -p "\$SITE/portal/theme"
cp -a /tmp/src/portal/theme/static "\$SITE/portal/theme/static"
mkdir -p /tmp/collect
printf 'from flexplane.settings.production import *  # noqa\nSTATIC_ROOT = "/opt/flexplane/static"\n' \
    > /tmp/collect/collect_settings.py
PYTHONPATH=/tmp/collect DJANGO_SETTINGS_MODULE=collect_settings \
    FLEXPLANE_SECRET_KEY=image-build-only-not-a-secret-key-0123456789-abcdefghijklmnopqrstuvwxyz \
    FLEXPLANE_ALLOWED_HOSTS=localhost \
    $VENV/bin/python -m django collectstatic --noinput --verbosity 0
$VENV/bin/python -m pip uninstall --quiet --yes pip setuptools
# What the orchestrator never imports: the kubernetes client's asyncio copy (it uses the synchronous
# one), the libraries' own test suites, and gettext sources (their compiled .mo files stay).
rm -rf "\$SITE/kubernetes/aio"
# boto3 reaches the backups' bucket only, as a client (manage.py backup, restore): botocore's models of
# every other AWS service go (28 MiB), and boto3's resource models but S3's; S3's stay, with STS's
# (credentials from a pod's web identity) and the shared files.
find "\$SITE/botocore/data" -mindepth 1 -maxdepth 1 -type d ! -name s3 ! -name sts -exec rm -rf {} +
find "\$SITE/boto3/data" -mindepth 1 -maxdepth 1 -type d ! -name s3 -exec rm -rf {} +
# dateutil's own copy of the tz database: dateutil reads Debian's tzdata, which the image has, first.
rm -f "\$SITE/dateutil/zoneinfo/dateutil-zoneinfo.tar.gz"
find "\$SITE" -depth -type d \( -name tests -o -name test -path "*/twisted/*" \) -exec rm -rf {} +
find "\$SITE" -name "*.po" -delete
# The other languages' compiled catalogs (Django's and its apps'): the orchestrator answers in en-us only
# (LANGUAGE_CODE, and no LocaleMiddleware or activate() that could choose another), so they are never read.
find "\$SITE" -path "*/locale/*/LC_MESSAGES" ! -path "*/locale/en/*" -type d -prune -exec rm -rf {} +
find "\$SITE" -path "*/locale/*" -type d -empty -delete
find $VENV -depth -type d -name __pycache__ -exec rm -rf {} +
INSIDE

# No package managers, compilers' leftovers, documentation or caches in the image. dpkg's database
# stays (/var/lib/dpkg: what scanners read to know the image's packages), its programs go, and with
# them what only they use: perl (dpkg's maintainer scripts), libapt, and glibc's iconv modules
# (gconv; Python has codecs of its own).
rm -rf "$OUT/tmp/src" "$OUT/tmp/wheels" "$OUT/tmp/collect" "$OUT/tmp/build-ca.crt" "$OUT/etc/resolv.conf" \
    "$OUT"/usr/bin/apt* "$OUT"/usr/bin/dpkg* "$OUT/usr/lib/apt" "$OUT/etc/apt" "$OUT/var/lib/apt" \
    "$OUT/var/cache/apt" "$OUT/var/cache/debconf" "$OUT/var/cache/ldconfig" "$OUT/usr/share/python-wheels" \
    "$OUT"/var/log/* "$OUT/usr/share/man" "$OUT/usr/share/info" "$OUT/usr/share/locale" "$OUT/usr/share/lintian" \
    "$OUT"/root/.cache "$OUT$VENV/bin/pip"* "$OUT$VENV"/bin/activate* \
    "$OUT"/usr/bin/perl* "$OUT/usr/lib/x86_64-linux-gnu/perl-base" "$OUT/usr/share/perl5" \
    "$OUT"/usr/lib/x86_64-linux-gnu/libapt-* "$OUT/usr/lib/x86_64-linux-gnu/gconv"
find "$OUT/usr/share/doc" -mindepth 1 ! -name copyright ! -type d -delete
find "$OUT/usr/share/doc" -mindepth 1 -type d -empty -delete
: > "$OUT/etc/machine-id"

echo "flexplane:x:$UID_GID:$UID_GID:flex.plane:/nonexistent:/usr/sbin/nologin" >> "$OUT/etc/passwd"
echo "flexplane:x:$UID_GID:" >> "$OUT/etc/group"
echo "flexplane:!:1::::::" >> "$OUT/etc/shadow"

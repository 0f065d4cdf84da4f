#!/usr/bin/env python3
"""A minimal Debian root filesystem made by debootstrap from Debian's archive, cached under .build/.

    python3 packaging/debian_root.py --suite bookworm [--include python3,ca-certificates] [--build .build]

prints the root's path. The root is made once per suite and package list and reused: it lives in
``<build>/roots/<suite>-<variant>-<key>/root`` with a ``complete`` stamp written last, so a run cut
short is started again rather than reused. Callers that change a root work on a copy (``cp -a``),
never on the cache. Root only (debootstrap mounts and chroots).
"""

from __future__ import annotations

import argparse
import hashlib
import os
import shutil
import subprocess
import sys
from pathlib import Path

MIRROR = os.environ.get("FLEXPLANE_DEBIAN_MIRROR", "http://deb.debian.org/debian")
VARIANT = "minbase"
HERE = Path(__file__).resolve().parent
DEFAULT_BUILD = HERE.parent / ".build"


def root_dir(build: Path, suite: str, include: list[str]) -> Path:
    key = hashlib.sha256(",".join(sorted(include)).encode()).hexdigest()[:10]
    return build / "roots" / f"{suite}-{VARIANT}-{key}"


def ensure_root(build: Path, suite: str, include: list[str]) -> Path:
    """The cached root of suite with these packages, made first if it is not there yet."""
    folder = root_dir(build, suite, include)
    root, stamp = folder / "root", folder / "complete"
    if stamp.is_file() and root.is_dir():
        return root
    if folder.exists():
        shutil.rmtree(folder)
    folder.mkdir(parents=True)
    argv = ["debootstrap", f"--variant={VARIANT}"]
    if include:
        argv.append("--include=" + ",".join(include))
    argv += [suite, str(root), MIRROR]
    print(f"debian_root: {' '.join(argv)}", file=sys.stderr, flush=True)
    subprocess.run(argv, check=True, stdout=subprocess.DEVNULL)  # noqa: S603 - fixed program
    # Downloaded .debs are not part of the root: they would only make every copy bigger.
    for deb in (root / "var/cache/apt/archives").glob("*.deb"):
        deb.unlink()
    stamp.write_text(" ".join(argv) + "\n", encoding="utf-8")
    return root


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--suite", default="bookworm")
    parser.add_argument("--include", default="", help="comma-separated packages to add")
    parser.add_argument("--build", type=Path, default=DEFAULT_BUILD)
    args = parser.parse_args()
    include = [name for name in args.include.split(",") if name]
    print(ensure_root(args.build.resolve(), args.suite, include))
    return 0


if __name__ == "__main__":
    sys.exit(main())

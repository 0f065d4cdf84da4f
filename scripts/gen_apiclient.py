"""Generate the typed API client (apiclient/generated/) from schema.graphql with ariadne-codegen.

Run from anywhere (the paths are taken from this file's location); `make schema` runs it after
writing schema.graphql::

    .venv/bin/python scripts/gen_apiclient.py            # write apiclient/generated/
    .venv/bin/python scripts/gen_apiclient.py --out DIR  # write DIR/apiclient/generated/

ariadne-codegen reads its settings from apiclient/codegen.toml and the operations from
apiclient/operations/*.graphql; its output is then fixed and formatted by the project's ruff, so that
the committed code is as clean as the hand-written code and lint needs no exclusion for it. The
generated files are committed; a test regenerates them into a temporary folder and fails when they
drift from the committed ones (tests/apiclient/test_generated.py).
"""

from __future__ import annotations

import argparse
import contextlib
import io
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

from ariadne_codegen.main import client

ROOT = Path(__file__).resolve().parent.parent
CONFIG = ROOT / "apiclient" / "codegen.toml"
PACKAGE = Path("apiclient") / "generated"


def settings(out_root: Path) -> dict[str, object]:
    """codegen.toml's settings, its paths made absolute, writing under ``out_root``."""
    with CONFIG.open("rb") as handle:
        document = tomllib.load(handle)
    section = document["tool"]["ariadne-codegen"]
    section["schema_path"] = str(ROOT / section["schema_path"])
    section["queries_path"] = str(ROOT / section["queries_path"])
    section["target_package_path"] = str(out_root / PACKAGE.parent)
    return document


def ruff(*arguments: str) -> None:
    """The project's ruff, with the project's settings wherever the files are."""
    command = [sys.executable, "-m", "ruff", *arguments, "--silent", "--config", str(ROOT / "pyproject.toml")]
    subprocess.run(command, check=True, timeout=120)  # noqa: S603 (the venv's own ruff, fixed arguments)


def generate(out_root: Path = ROOT) -> list[Path]:
    """Write ``out_root/apiclient/generated/`` anew (no module of a removed operation is left behind);
    returns the files written."""
    target = out_root / PACKAGE
    shutil.rmtree(target, ignore_errors=True)
    target.parent.mkdir(parents=True, exist_ok=True)
    # ariadne-codegen reports its settings and files on stdout: the caller lists the files itself.
    with contextlib.redirect_stdout(io.StringIO()):
        client(settings(out_root))
    # What ruff cannot fix is left to lint, which checks the committed files (pyproject.toml lets the
    # schema's long descriptions be).
    ruff("check", "--fix", "--unsafe-fixes", "--exit-zero", str(target))
    ruff("format", str(target))
    return sorted(target.rglob("*.py"))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=ROOT, help="output root (default: the repository)")
    args = parser.parse_args(argv)
    for path in generate(args.out.resolve()):
        print(path)
    return 0


if __name__ == "__main__":
    sys.exit(main())

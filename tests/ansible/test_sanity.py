"""``ansible-test sanity`` of the collection flexplane.cloud, as Ansible's own collections are checked:
its modules' documentation against their argument specs (validate-modules), ansible-doc, pylint, pep8,
yamllint, imports without the modules' requirements (flexplane-client), compile, runtime metadata, ...

It runs ``--local`` with this checkout's Python 3.11 (no container). ansible-test still gives each test
that needs tools (pylint, voluptuous, yamllint, ...) a virtual environment of its own, which it fills from
PyPI with pip bootstrapped by a script it downloads from Ansible's CI file server, unreachable here: the
tests' own home (``.scratch/ansible-test-home``, kept between runs so the environments are made once)
holds tests/ansible/get_pip.py in that script's place. Nothing is excluded; pslint and shellcheck have no
files of the collection to check.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
COLLECTION = ROOT / "ansible_collections" / "flexplane" / "cloud"
HOME = ROOT / ".scratch" / "ansible-test-home"
# Where ansible-test looks for its pip bootstrap (the pinned pip version of ansible-core 2.19's ansible-test).
BOOTSTRAP = HOME / ".ansible" / "test" / "cache" / "get_pip_24_2.py"


@pytest.mark.timeout(900)  # a first run makes a virtual environment per test, from PyPI
def test_the_collection_passes_ansible_test_sanity() -> None:
    BOOTSTRAP.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(Path(__file__).with_name("get_pip.py"), BOOTSTRAP)
    ansible_test = Path(sys.executable).with_name("ansible-test")

    done = subprocess.run(
        [str(ansible_test), "sanity", "--python", "3.11", "--local", "--color", "no", "--truncate", "0"],
        cwd=COLLECTION,
        env={**os.environ, "HOME": str(HOME)},
        capture_output=True,
        text=True,
        timeout=840,
        check=False,
    )

    output = done.stdout + done.stderr
    assert done.returncode == 0, output
    assert 'Running sanity test "validate-modules"' in output
    assert 'Running sanity test "pylint"' in output

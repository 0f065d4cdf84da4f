"""The collection flexplane.cloud driven by ``ansible-playbook`` (a process of its own, as a user runs it)
against the API of this process served over HTTP on loopback (``tests/portal/served.py``: Django's WSGI
handler behind a threading server, the services on the light world), signed in with a service account's
key that the devstack's identity provider (a real process, Zitadel's shapes) made and exchanges for
tokens the API is set to trust (tests/cli's fixtures).

The modules run on the controller (a local connection) with this checkout's Python: ``apiclient`` on
their path stands for the flexplane-client distribution a user installs.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from apiclient import FlexPlane, ServiceAccountKey
from devstack import seed
from devstack.identity.process import IdentityProvider
from orchestrator.sources.zitadel import ZitadelSource
from tests.cli.conftest import (
    api,
    identity,
    identity_api,
    issuer,
    kube,
    light,
    service_account_key,
    tenant_clusters,
    transport,
    trusting,
    vm_name,
    zitadel,
)
from tests.orchestrator.lightworld import LightWorld
from tests.portal.served import LightPortal, served

__all__ = [
    "api",
    "identity",
    "identity_api",
    "issuer",
    "kube",
    "light",
    "tenant_clusters",
    "transport",
    "trusting",
    "vm_name",
    "zitadel",
]

ROOT = Path(__file__).resolve().parents[2]
PLAYBOOKS = Path(__file__).resolve().parent / "playbooks"
# ``localhost : ok=9 changed=0 unreachable=0 failed=0 ...``: the play recap's line for the host.
RECAP = re.compile(r"^localhost\s+:\s+(?P<counts>.*)$", re.MULTILINE)


@dataclass(frozen=True)
class Run:
    """One ``ansible-playbook`` run: its exit code, its output, and the recap's counts for localhost."""

    returncode: int
    output: str

    @property
    def recap(self) -> dict[str, int]:
        found = RECAP.findall(self.output)
        assert found, f"no play recap in:\n{self.output}"
        return {name: int(count) for name, count in (pair.split("=") for pair in found[-1].split())}


Playbook = Callable[..., Run]


@pytest.fixture(scope="module")
def site(light: LightWorld) -> Iterator[LightPortal]:
    """The API of this process at ``site.url``, over HTTP on the light world's loopback subnet."""
    with served(light) as running:
        yield running


@pytest.fixture
def key_file(identity_api: ZitadelSource, tmp_path: Path, request: pytest.FixtureRequest) -> Path:
    """A service account's key file of VDC demo, as a user saves createServiceAccount's answer."""
    path = tmp_path / "key.json"
    name = f"ans{abs(hash(request.node.nodeid)) % 10**8}"
    path.write_text(service_account_key(identity_api, name), encoding="utf-8")
    return path


@pytest.fixture
def as_key(
    site: LightPortal, identity: IdentityProvider, key_file: Path, trusting: None
) -> Iterator[FlexPlane]:
    """The API as the playbooks' service account sees VDC demo, through the Python client: what a test
    checks the playbooks' work with, beside their own *_info tasks."""
    key = ServiceAccountKey.from_file(key_file, identity.api_url, seed.PROJECT_ID)
    with FlexPlane(site.url, key, vdc="demo") as client:
        yield client


@pytest.fixture
def playbook(
    site: LightPortal, identity: IdentityProvider, key_file: Path, trusting: None, tmp_path: Path
) -> Playbook:
    """``playbook("build.yml", vm="web-1", ...)``: a run of tests/ansible/playbooks' playbook against the
    served API, with the connection's variables and the given ones (``check=True``: in check mode, with
    diffs)."""
    home = tmp_path / "ansible"
    home.mkdir()
    environment = {
        **os.environ,
        "ANSIBLE_COLLECTIONS_PATH": str(ROOT),
        "ANSIBLE_HOME": str(home),
        "ANSIBLE_LOCAL_TEMP": str(home / "tmp"),
        "ANSIBLE_NOCOLOR": "1",
        "ANSIBLE_RETRY_FILES_ENABLED": "0",
        "PYTHONPATH": str(ROOT),
    }

    def run(name: str, *, check: bool = False, **variables: Any) -> Run:
        given = {
            "flexplane_url": site.url,
            "vdc": "demo",
            "key_file": str(key_file),
            "issuer": identity.issuer,
            "project_id": seed.PROJECT_ID,
            **variables,
        }
        extra = tmp_path / "vars.json"
        extra.write_text(json.dumps(given), encoding="utf-8")
        command = [
            str(Path(sys.executable).with_name("ansible-playbook")),
            "-i",
            "localhost,",
            "-c",
            "local",
            "-e",
            f"ansible_python_interpreter={sys.executable}",
            "-e",
            f"@{extra}",
            *(["--check", "--diff"] if check else []),
            str(PLAYBOOKS / name),
        ]
        done = subprocess.run(
            command,
            cwd=tmp_path,
            env=environment,
            capture_output=True,
            text=True,
            timeout=240,
            check=False,
        )
        return Run(done.returncode, done.stdout + done.stderr)

    return run

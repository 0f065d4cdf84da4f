"""``flexplane`` driven in this process through typer's ``CliRunner``, against the API in this process on the
light world (tests/apiclient's fixtures: the client's HTTP carried to Django's WSGI application), signed in
as a service account whose key the devstack's identity provider (a real process, Zitadel's shapes) made
and exchanges for tokens the API is set to trust, as the orchestrator trusts Zitadel's.

Each test has a config folder of its own (its profiles and credentials): ``flexplane("vms", "list")``.
"""

from __future__ import annotations

import datetime
import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from django.test import override_settings
from typer.testing import CliRunner, Result

from apiclient.cli import app
from apiclient.cli.config import Store
from apiclient.cli.session import Environment
from devstack import seed
from devstack.identity.claims import ORGANISATION_ID
from devstack.identity.process import IdentityProvider
from devstack.net import free_port
from orchestrator import auth
from orchestrator.sources.zitadel import ServiceKey, ZitadelSource
from tests import addresses
from tests.apiclient.conftest import (
    ORIGIN,
    api,
    issuer,
    kube,
    light,
    tenant_clusters,
    transport,
    vm_name,
    zitadel,
)

__all__ = ["api", "issuer", "kube", "light", "tenant_clusters", "transport", "vm_name", "zitadel"]

HOST = addresses.address(addresses.IDENTITY_SUITE, 22)
VDC = "demo"
Flexplane = Callable[..., Result]


@pytest.fixture(scope="module")
def identity(tmp_path_factory: pytest.TempPathFactory) -> Iterator[IdentityProvider]:
    with IdentityProvider.start(
        tmp_path_factory.mktemp("zitadel"),
        HOST,
        free_port(HOST),
        seed.USERS,
        project_id=seed.PROJECT_ID,
        device_poll_interval=1,
    ) as provider:
        yield provider


@pytest.fixture(scope="module")
def identity_api(identity: IdentityProvider) -> ZitadelSource:
    """The identity provider's Zitadel API, as the orchestrator's service user writes to it."""
    return ZitadelSource(
        identity.api_url, ServiceKey.from_file(identity.zitadel_key_path), seed.PROJECT_ID, timeout=5.0
    )


def service_account_key(identity_api: ZitadelSource, name: str, vdc: str = VDC) -> str:
    """A key file of a machine user with USER in ``vdc`` and JWT tokens, as createServiceAccount makes one."""
    user_id = identity_api.create_machine_user(ORGANISATION_ID, f"sa.{vdc}.{name}", name, "the CLI's tests")
    identity_api.use_jwt_access_tokens(user_id, ORGANISATION_ID, name, "the CLI's tests")
    identity_api.create_authorization(user_id, ORGANISATION_ID, ["USER", f"vdc:{vdc}"])
    tomorrow = datetime.datetime.now(datetime.UTC) + datetime.timedelta(days=1)
    return identity_api.add_machine_key(user_id, tomorrow)


@pytest.fixture
def trusting(identity: IdentityProvider, vm_name: Callable[[str], str]) -> Iterator[None]:
    """The API in this process taking the identity provider's tokens (and no others), as the orchestrator
    is set up for Zitadel. After ``vm_name``, so that its clean-up (as the light world's admin) is after."""
    with (
        override_settings(
            FLEXPLANE_OIDC_ISSUER=identity.issuer,
            FLEXPLANE_OIDC_AUDIENCE=seed.PROJECT_ID,
            FLEXPLANE_OIDC_PROJECT_ID=seed.PROJECT_ID,
            FLEXPLANE_OIDC_ALGORITHMS=["RS256"],
            FLEXPLANE_OIDC_ACCESS_TOKEN_TYPE="at+jwt",
        ),
        pytest.MonkeyPatch.context() as patch,
    ):
        patch.setattr(auth, "_validator", None)
        yield


@pytest.fixture
def config_dir(tmp_path: Path) -> Path:
    return tmp_path / "config" / "flexplane"


@pytest.fixture
def flexplane(config_dir: Path, transport: httpx.WSGITransport) -> Flexplane:
    """``flexplane(*args)``: one run of the CLI with the test's config folder, the API in this process (and
    what else of ``Environment`` the test gives: ``err=Console(file=...)`` to read it as it runs)."""
    runner = CliRunner()

    def run(*args: str, **environment: Any) -> Result:
        reaches = Environment(store=Store(config_dir), transport=transport, poll_interval=0.05, **environment)
        return runner.invoke(app, list(args), obj=reaches)

    return run


@pytest.fixture
def key_file(identity_api: ZitadelSource, tmp_path: Path, request: pytest.FixtureRequest) -> Path:
    """A service account's key file of VDC demo, as a user saves createServiceAccount's answer."""
    path = tmp_path / "key.json"
    name = f"cli{abs(hash(request.node.nodeid)) % 10**8}"
    path.write_text(service_account_key(identity_api, name), encoding="utf-8")
    return path


@pytest.fixture
def logged_in(
    flexplane: Flexplane, identity: IdentityProvider, key_file: Path, trusting: None
) -> dict[str, str]:
    """The CLI logged in with the key, its profile acting in VDC demo; the key's JSON."""
    result = flexplane(
        "login",
        "--url",
        ORIGIN,
        "--issuer",
        identity.issuer,
        "--project-id",
        seed.PROJECT_ID,
        "--vdc",
        VDC,
        "--service-account-key",
        str(key_file),
    )
    assert result.exit_code == 0, result.output
    key: dict[str, str] = json.loads(key_file.read_text(encoding="utf-8"))
    return key

"""The devstack's identity provider (a real ``python -m devstack.identity`` process, as Zitadel) for a test
module, and the orchestrator's Zitadel client on it: the suites that make service accounts there start it
the same way, each on an address of its own (so that two suites never share a port).

A module takes them as fixtures named ``identity`` and ``zitadel``::

    identity = identity_fixture(HOST)
    zitadel = zitadel_fixture("vdc:sa-suite", "service account suite")
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from devstack import seed
from devstack.identity.process import IdentityProvider
from devstack.net import free_port
from orchestrator.sources.zitadel import ServiceKey, ZitadelSource


def identity_fixture(host: str) -> Any:
    """A module's ``identity``: the provider on ``host`` (a free port) with the devstack's users and
    project, stopped at the module's end."""

    @pytest.fixture(scope="module")
    def identity(tmp_path_factory: pytest.TempPathFactory) -> Iterator[IdentityProvider]:
        with IdentityProvider.start(
            tmp_path_factory.mktemp("zitadel"), host, free_port(host), seed.USERS, project_id=seed.PROJECT_ID
        ) as provider:
            yield provider

    return identity


def zitadel_fixture(vdc_role: str, description: str) -> Any:
    """A module's ``zitadel``: the provider as the orchestrator's service user writes to it
    (createServiceAccount), with the VDC's project role that the module's service accounts are granted."""

    @pytest.fixture(scope="module")
    def zitadel(identity: IdentityProvider) -> ZitadelSource:
        source = ZitadelSource(
            identity.api_url, ServiceKey.from_file(identity.zitadel_key_path), seed.PROJECT_ID, timeout=5.0
        )
        source.add_project_role(vdc_role, description, "vdc")
        return source

    return zitadel

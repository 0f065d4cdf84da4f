"""The CSI driver's controller on its stand-ins: flex.plane's API in this process on the light world
(``tests/orchestrator/api/light``), reached through ``apiclient`` over ``httpx.WSGITransport`` as a service
account of a scratch VDC (USER there only), as ``tests/providers/cloud/conftest.py`` reaches it; the
controller served on a Unix socket, as its sidecars reach it. The VDC has a storage profile on shared
storage (Ceph RBD in the fake), as a tenant cluster's StorageClass would use, and a worker VM.
"""

from __future__ import annotations

import datetime
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import grpc
import httpx
import pytest
from django.core.handlers.wsgi import WSGIHandler

from apiclient import FlexPlane
from providers.csi.__main__ import controller_services, serve
from providers.csi.controller import ControllerService
from providers.csi.proto import csi_pb2 as csi
from providers.csi.proto import csi_pb2_grpc
from tests.apiclient.conftest import ORIGIN
from tests.orchestrator.api.light.conftest import api, issuer, kube, light, tenant_clusters, zitadel
from tests.orchestrator.api.light.test_service_accounts import machine_token
from tests.orchestrator.fakezitadel import FakeZitadel
from tests.orchestrator.inprocess import InProcessApi
from tests.orchestrator.lightworld import LightWorld
from tests.vmkit import create, ok, payload, scratch_vdcs

__all__ = ["api", "issuer", "kube", "light", "tenant_clusters", "zitadel"]

ZONE = "zone-a"
CREATE_ACCOUNT = (
    "mutation($v: ID!, $n: String!, $e: DateTime!) { createServiceAccount(vdc: $v, name: $n, expiresAt: $e) "
    "{ serviceAccount { id } errors { field code message } } }"
)
REVOKE_ACCOUNT = "mutation($id: ID!) { revokeServiceAccount(id: $id) { errors { code } } }"
MOUNT = csi.VolumeCapability(
    mount=csi.VolumeCapability.MountVolume(fs_type="ext4"),
    access_mode=csi.VolumeCapability.AccessMode(mode=csi.VolumeCapability.AccessMode.SINGLE_NODE_WRITER),
)
BLOCK = csi.VolumeCapability(
    block=csi.VolumeCapability.BlockVolume(),
    access_mode=csi.VolumeCapability.AccessMode(mode=csi.VolumeCapability.AccessMode.SINGLE_NODE_WRITER),
)
SHARED = csi.VolumeCapability(
    mount=csi.VolumeCapability.MountVolume(),
    access_mode=csi.VolumeCapability.AccessMode(mode=csi.VolumeCapability.AccessMode.MULTI_NODE_MULTI_WRITER),
)
# Shared storage, as a StorageClass of a tenant cluster wants it (a volume attaches to a VM on any host).
SHARED_STORAGE = "rbd-tenants"
PROFILE = f"t{uuid.uuid4().hex[:8]}-replicated"
CLASS = {"storageProfile": PROFILE, "csi.storage.k8s.io/pv/name": "pvc-x"}
CREATE_PROFILE = (
    "mutation($input: StorageProfileInput!) { createStorageProfile(input: $input) { errors { message } } }"
)
DELETE_PROFILE = "mutation($name: String!) { deleteStorageProfile(name: $name) { errors { message } } }"


@pytest.fixture(scope="module")
def shared_profile(api: InProcessApi, light: LightWorld) -> Iterator[str]:
    """A storage profile on a shared (Ceph RBD) storage of zone-a's, made for the module."""
    pve = light.fakes[ZONE].pve
    storage = {"type": "rbd", "content": "images", "shared": 1, "active": 1, "files": set()}
    light.fakes.on_loop(lambda: pve.storages.__setitem__(SHARED_STORAGE, storage))
    limits = {"defaultGb": 10, "minGb": 10, "maxGb": 100}
    storages = [{"zone": ZONE, "storage": SHARED_STORAGE}]
    made = api(
        CREATE_PROFILE, user="admin", variables={"input": {"name": PROFILE, "storages": storages, **limits}}
    )
    assert payload(made, "createStorageProfile")["errors"] == []
    yield PROFILE
    api(DELETE_PROFILE, user="admin", variables={"name": PROFILE})
    light.fakes.on_loop(lambda: pve.storages.pop(SHARED_STORAGE, None))


@pytest.fixture(scope="module")
def vdc(api: InProcessApi, light: LightWorld, shared_profile: str) -> Iterator[str]:
    """The cluster's VDC, of zone-a, 100 GiB of disk; its VMs and volumes go with it."""
    with scratch_vdcs(api, light) as make:
        yield make(storage_profiles=("standard", shared_profile), diskGb=100)


@pytest.fixture(scope="module")
def controller_api(api: InProcessApi, zitadel: FakeZitadel, vdc: str) -> Iterator[FlexPlane]:
    """flex.plane's API as the cluster's service account, in its VDC, through the WSGI app in this process."""
    expires = (datetime.datetime.now(datetime.UTC) + datetime.timedelta(days=1)).isoformat()
    made = payload(
        api(CREATE_ACCOUNT, user="admin", variables={"v": vdc, "n": "csi-web", "e": expires}),
        "createServiceAccount",
    )
    assert made["errors"] == [], made["errors"]
    token = machine_token(api, zitadel, made["serviceAccount"]["id"])
    with FlexPlane(ORIGIN, token, vdc=vdc, transport=httpx.WSGITransport(app=WSGIHandler())) as client:
        yield client
    api(REVOKE_ACCOUNT, user="admin", variables={"id": made["serviceAccount"]["id"]})


@pytest.fixture(scope="module")
def channel(controller_api: FlexPlane, tmp_path_factory: pytest.TempPathFactory) -> Iterator[grpc.Channel]:
    """The controller served on a Unix socket, as its sidecars reach it; a channel to it."""
    socket = Path(tmp_path_factory.mktemp("csi")) / "csi.sock"
    server, _ = serve(f"unix://{socket}", controller_services(ControllerService(controller_api)))
    opened = grpc.insecure_channel(f"unix://{socket}")
    yield opened
    opened.close()
    server.stop(None).wait()


@pytest.fixture(scope="module")
def stub(channel: grpc.Channel) -> Any:
    """The controller's Controller service, as the sidecars call it."""
    return csi_pb2_grpc.ControllerStub(channel)


@pytest.fixture(scope="module")
def worker(api: InProcessApi, vdc: str) -> dict[str, str]:
    """A worker VM of the VDC: the node the volumes are published to (its name is the node id)."""
    vm: dict[str, str] = ok(create(api, "admin", vdc, name=f"{vdc}-w1"))["virtualMachine"]
    return vm

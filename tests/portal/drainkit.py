"""A host's drain as the tests stage it: a host of zone-a whose agent never answers (so nothing else moves
it) and the drain record its runner would write, in whichever management cluster the portal under test reads
(the devstack world's, ``tests.kubekit.world_kube``, or the light world's)."""

from __future__ import annotations

import contextlib
import uuid
from collections.abc import Iterator

from orchestrator.models.zones import host_ident
from orchestrator.services import catalog, hosts
from orchestrator.sources.protocols import KubeApi
from tests.apikit import Api

ZONE = "zone-a"


def write_drain(kube: KubeApi, node: str, state: str, moved: int, total: int = 2) -> None:
    """Record a drain of host ``zone-a/<node>`` as a drain's runner records it as it goes (``moved`` of
    ``total`` VMs moved, a fresh heartbeat)."""
    started = hosts.records.now()
    vms = [
        hosts.DrainVm(
            vmid=900 + i, name=f"vm-{i}", vdc="demo", state=hosts.MOVED if i < moved else hosts.PENDING
        )
        for i in range(total)
    ]
    drain = hosts.HostDrain(ZONE, node, state, vms, "admin", started, started, "test", started)
    ident = host_ident(ZONE, node)
    labels = {catalog.ZONE_LABEL: ZONE}
    held = kube.get_catalog(hosts.DRAIN, ident)
    if held is None:
        kube.create_catalog(hosts.DRAIN, ident, drain.to_spec(), labels=labels)
    else:
        kube.replace_catalog(hosts.DRAIN, ident, drain.to_spec(), held.resource_version, labels=labels)


@contextlib.contextmanager
def drained_host(api: Api, kube: KubeApi) -> Iterator[str]:
    """A host of zone-a whose agent never answers, and its drain record made by the test; both go
    afterwards."""
    node = f"tdrain{uuid.uuid4().hex[:6]}"
    made = api(
        "mutation($input: HostInput!) { createHost(input: $input) { errors { message } } }",
        user="admin",
        variables={"input": {"zone": ZONE, "host": node, "endpoint": "127.0.0.1:9"}},
    )
    assert made.data["createHost"]["errors"] == [], made.body
    try:
        yield node
    finally:
        kube.delete_catalog(hosts.DRAIN, host_ident(ZONE, node))
        api(
            "mutation($zone: String!, $host: String!) { removeHost(zone: $zone, host: $host, force: true) "
            "{ errors { message } } }",
            user="admin",
            variables={"zone": ZONE, "host": node},
        )

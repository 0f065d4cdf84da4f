"""The devstack's zones without its processes: fake Proxmox clusters served from this process, the
orchestrator's own Proxmox source reaching them through agents that run in this process too.

What runs as in the world: fakepve with the harness's gap closers (``devstack.fakezones``: SDN, snapshots,
tasks, firewalls, migrations), the seeded pools, VMs and VDCs, and every line of ``sources.proxmox``
(fan-outs, failover, deadlines, ``ZoneApi``), each call checked against the agent's own allowlist
(``agent.proxy.check``) before it is forwarded over HTTPS with the node's API token, as the agent's proxy
forwards it. What stands in: the agents' gRPC hop (``LocalAgents`` is the ``AgentPool`` the source calls),
the images each agent caches (the templates are there from the start, as the world waits for them), the
snippets folder (kept in memory), and the agents' gateways (a host whose agent does not answer).

With ``tests/orchestrator/inprocess.py`` the API runs on it: a GraphQL test of creates, networks,
snapshots or firewalls runs in-process, the devstack's world left for the wiring.
"""

from __future__ import annotations

import secrets
import threading
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import requests
from django.conf import settings

from agent.proxy.check import authorize
from agent.proxy.params import Policy
from agent.proxy.refusal import NotAllowed
from agentclient import AgentInfo, AgentTarget, AgentUnavailable, ProxmoxError, host_identity
from agentclient.errors import ProxyRefused
from agentclient.pool import encode_params
from agentclient.templates import TemplateProgress, TemplateRef, split_tags, template_name, template_tags
from devstack import seed
from devstack.fakezones import TOKEN_ID, FakeZones
from orchestrator.models import Host
from orchestrator.models.zones import host_ident
from orchestrator.services.catalog import HOST, ZONE_LABEL
from orchestrator.sources.proxmox import ProxmoxSource
from tests import addresses
from tests.orchestrator.fakekube import FakeKube, seeded
from tests.orchestrator.fakeproxmox import AbsentAgents

ZONES = ("zone-a", "zone-b")
NODES = ("pve1", "pve2", "pve3")
AGENT_PORT = 7443
SNIPPETS_STORAGE = "local"
# Third octets on the worker's world subnet for the light world's nodes (tests/addresses.py).
FIRST_OCTET = addresses.LIGHT_ZONES


class LocalAgents(AbsentAgents):
    """The agents of the light world's nodes, in this process: their proxy (the allowlist, then the node's
    Proxmox API with its token), their templates and snippets. Their gateways and updates are not here:
    such a call is a host whose agent does not answer (``AbsentAgents``)."""

    def __init__(self, fakes: FakeZones, nodes: Mapping[str, tuple[str, str]]) -> None:  # no channels
        self.fakes = fakes
        self.nodes = dict(nodes)  # identity -> (zone, node)
        self.snippets: dict[tuple[str, str], bytes] = {}
        self._http = threading.local()
        self.policy = Policy(snippets_storage=SNIPPETS_STORAGE)
        self.joined = int(time.time())

    def _session(self) -> requests.Session:
        session: requests.Session | None = getattr(self._http, "session", None)
        if session is None:
            session = requests.Session()
            session.trust_env = False  # the machine's CA bundle and proxies are not the node's
            session.verify = self.fakes.certfile
            self._http.session = session
        return session

    def _where(self, target: AgentTarget) -> tuple[str, str]:
        if target.identity not in self.nodes:
            raise AgentUnavailable(target, "no agent of the light world has this identity")
        return self.nodes[target.identity]

    def proxmox(
        self,
        target: AgentTarget,
        method: str,
        path: str,
        params: Mapping[str, object] | None = None,
        *,
        timeout: float | None = None,
    ) -> Any:
        zone, node = self._where(target)
        encoded = encode_params(params)
        try:
            authorize(method, path, encoded, policy=self.policy)
        except NotAllowed as exc:
            raise ProxyRefused(target, str(exc)) from None
        fake = self.fakes[zone]
        url = f"{fake.url(node)}/api2/json{path}"
        headers = {"Authorization": f"PVEAPIToken={TOKEN_ID}={fake.token_secret}"}
        as_query = method in ("GET", "DELETE")
        try:
            response = self._session().request(
                method,
                url,
                params=encoded if as_query else None,
                data=None if as_query else encoded,
                headers=headers,
                timeout=timeout or 10.0,
            )
        except requests.RequestException as exc:
            raise AgentUnavailable(target, f"the node's Proxmox API did not answer: {exc}") from exc
        document = response.json() if response.content else {}
        if response.status_code >= 400:
            message = str(document.get("message") or response.reason or "")
            raise ProxmoxError(target, response.status_code, message, dict(document.get("errors") or {}))
        return document.get("data")

    def info(self, target: AgentTarget, *, timeout: float | None = None) -> AgentInfo:
        zone, node = self._where(target)
        version = self.proxmox(target, "GET", "/version", timeout=timeout) or {}
        return AgentInfo(
            version="0.0.0+light",
            node=node,
            zone=zone,
            identity=target.identity,
            proxmox_version=str(version.get("version", "")),
            # As a node's agent reports the certificate the platform signed when it joined.
            certificate_not_after=self.joined + int(settings.FLEXPLANE_AGENT_CERT_LIFETIME),
        )

    def ensure_template(
        self,
        target: AgentTarget,
        image: str,
        url: str,
        checksum: str,
        storage: str,
        *,
        timeout: float,
        on_progress: Callable[[TemplateProgress], None] | None = None,
    ) -> TemplateRef:
        """The node's template of the image: the world's agents cached it when they joined."""
        zone, node = self._where(target)
        wanted = set(template_tags(image, storage))

        def find(pve: Any) -> int | None:
            for vm in pve.vms:
                tags = split_tags(vm.config.get("tags"))
                if vm.template and vm.node == node and vm.name == template_name(image) and wanted <= tags:
                    return int(vm.vmid)
            return None

        vmid = self.fakes.on_loop(find, self.fakes[zone].pve)
        if vmid is None:
            raise AgentUnavailable(target, f"the light world's node holds no template of {image}")
        return TemplateRef(vmid=vmid, node=node)

    def write_snippet(self, target: AgentTarget, name: str, content: bytes, *, timeout: float) -> str:
        self.snippets[target.identity, name] = content
        return f"{SNIPPETS_STORAGE}:snippets/{name}"

    def delete_snippet(self, target: AgentTarget, name: str, *, timeout: float) -> None:
        self.snippets.pop((target.identity, name), None)


def _seed_templates(pve: Any, zone: str, nodes: tuple[str, ...], storage: str) -> None:
    """Every offered image's template on every node, as the agents leave them after joining."""
    images = sorted({image for vdc in seed.VDCS if zone in vdc["zones"] for image in vdc["images"]})
    vmid = 9100
    for node in nodes:
        for image in images:
            tags = ";".join(template_tags(image, storage))
            config = {
                "cores": 1,
                "memory": 1024,
                "scsi0": f"{storage}:base-{vmid}-disk-0,size=4G",
                "tags": tags,
            }
            pve.add_vm(vmid, template_name(image), node=node, template=True, config=config)
            vmid += 1


class LightWorld:
    """Two zones of three nodes, seeded as the devstack's; the management cluster in memory with its
    catalog and the hosts enrolled; ``proxmox`` the orchestrator's source on them."""

    def __init__(self, scratch: Path) -> None:
        zones = {
            zone: {node: addresses.address(FIRST_OCTET + z, n + 1) for n, node in enumerate(NODES)}
            for z, zone in enumerate(ZONES)
        }
        self.fakes = FakeZones(zones, {zone: secrets.token_hex(16) for zone in ZONES}, scratch / "fakepve")
        for zone in ZONES:
            pve = self.fakes[zone].pve
            seed.seed_pools(pve, zone)
            seed.seed_guests(pve, zone)
            _seed_templates(pve, zone, NODES, seed.STANDARD_STORAGE)
        self.kube: FakeKube = seeded(ZONES)
        # Where each node's agent answers, as its host's catalog entry says.
        self.endpoints = {
            (zone, node): f"{address}:{AGENT_PORT}"
            for zone, nodes in zones.items()
            for node, address in nodes.items()
        }
        identities = {}
        for (zone, node), endpoint in self.endpoints.items():
            host = Host(key=f"{zone}/{node}", zone=zone, node=node, endpoint=endpoint)
            self.kube.create_catalog(HOST, host_ident(zone, node), host.to_spec(), labels={ZONE_LABEL: zone})
            identities[host_identity(zone, node)] = (zone, node)
        self.agents = LocalAgents(self.fakes, identities)
        self.proxmox = ProxmoxSource(self.agents, call_timeout=2.0, deadline=5.0)

    def __enter__(self) -> LightWorld:
        self.fakes.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.fakes.stop()

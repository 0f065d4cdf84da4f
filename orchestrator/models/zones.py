"""Zones (one Proxmox cluster each) and their hosts, from the platform catalog."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from django.db import models

from agentclient import AgentTarget, host_identity

DEFAULT_MEMORY_OVERCOMMIT = 1.0
DEFAULT_CPU_OVERCOMMIT = 4.0


class Zone(models.Model):
    """A Proxmox cluster that VMs can be placed in."""

    id = models.CharField(primary_key=True, max_length=63)
    name = models.CharField(max_length=200)
    description = models.TextField(blank=True, default="")

    class Meta:
        managed = False

    def __str__(self) -> str:
        return self.id

    @classmethod
    def from_spec(cls, spec: Mapping[str, Any]) -> Zone:
        ident = str(spec["id"])
        return cls(
            id=ident, name=str(spec.get("name") or ident), description=str(spec.get("description") or "")
        )

    def to_spec(self) -> dict[str, Any]:
        return {"id": self.id, "name": self.name, "description": self.description}


def host_ident(zone: str, node: str) -> str:
    """A host's id in the catalog: ``<zone>.<node>`` (both DNS labels, so the dot is unambiguous)."""
    return f"{zone}.{node}"


class Host(models.Model):
    """A Proxmox node of a zone, and the address of the flex.plane agent that runs on it.

    A cordoned host takes no new VMs; its VMs keep running. Placement counts a host's memory
    times ``memory_overcommit`` and its CPU threads times ``cpu_overcommit``.
    """

    key = models.CharField(primary_key=True, max_length=127)
    zone = models.CharField(max_length=63)
    node = models.CharField(max_length=63)
    endpoint = models.CharField(max_length=255)
    cordoned = models.BooleanField(default=False)
    memory_overcommit = models.FloatField(default=DEFAULT_MEMORY_OVERCOMMIT)
    cpu_overcommit = models.FloatField(default=DEFAULT_CPU_OVERCOMMIT)

    class Meta:
        managed = False

    def __str__(self) -> str:
        return self.key

    @classmethod
    def from_spec(cls, spec: Mapping[str, Any]) -> Host:
        zone, node = str(spec["zone"]), str(spec["node"])
        return cls(
            key=f"{zone}/{node}",
            zone=zone,
            node=node,
            endpoint=str(spec["endpoint"]),
            cordoned=bool(spec.get("cordoned", False)),
            memory_overcommit=float(spec.get("memoryOvercommit", DEFAULT_MEMORY_OVERCOMMIT)),
            cpu_overcommit=float(spec.get("cpuOvercommit", DEFAULT_CPU_OVERCOMMIT)),
        )

    def to_spec(self) -> dict[str, Any]:
        return {
            "zone": self.zone,
            "node": self.node,
            "endpoint": self.endpoint,
            "cordoned": self.cordoned,
            "memoryOvercommit": self.memory_overcommit,
            "cpuOvercommit": self.cpu_overcommit,
        }

    @property
    def ident(self) -> str:
        """The host's id in the catalog (``<zone>.<node>``)."""
        return host_ident(self.zone, self.node)

    @property
    def target(self) -> AgentTarget:
        """Where to dial this host's agent, and the name its certificate must carry."""
        return AgentTarget(identity=host_identity(self.zone, self.node), address=self.endpoint)

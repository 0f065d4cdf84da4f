"""Zones (one Proxmox cluster each) and their hosts, from the platform catalog."""

from __future__ import annotations

from typing import Any

from django.db import models

from agentclient import AgentTarget, host_identity


def _flag(value: str | None) -> bool:
    return (value or "").strip().lower() in {"1", "true", "yes"}


class Zone(models.Model):
    """A Proxmox cluster that VMs can be placed in."""

    id = models.CharField(primary_key=True, max_length=63)
    name = models.CharField(max_length=200)
    description = models.TextField(blank=True)

    class Meta:
        managed = False

    def __str__(self) -> str:
        return self.id

    @classmethod
    def from_catalog(cls, item: dict[str, Any]) -> Zone:
        data = item["data"]
        ident = data.get("id") or item["name"].removeprefix("zone-")
        return cls(id=ident, name=data.get("name") or ident, description=data.get("description", ""))


class Host(models.Model):
    """A Proxmox node of a zone, and the address of the flex.plane agent that runs on it."""

    key = models.CharField(primary_key=True, max_length=127)
    zone = models.CharField(max_length=63)
    node = models.CharField(max_length=63)
    endpoint = models.CharField(max_length=255)
    cordoned = models.BooleanField(default=False)

    class Meta:
        managed = False

    def __str__(self) -> str:
        return self.key

    @classmethod
    def from_catalog(cls, item: dict[str, Any]) -> Host:
        data = item["data"]
        return cls(
            key=f"{data['zone']}/{data['node']}",
            zone=data["zone"],
            node=data["node"],
            endpoint=data["endpoint"],
            cordoned=_flag(data.get("cordoned")),
        )

    @property
    def target(self) -> AgentTarget:
        """Where to dial this host's agent, and the name its certificate must carry."""
        return AgentTarget(identity=host_identity(self.zone, self.node), address=self.endpoint)

"""A VM's own Proxmox firewall: its options, its rules and its IP sets, in typed values.

The only place that spells firewall paths. Every call is on one VM's firewall
(``/nodes/{node}/qemu/{vmid}/firewall/...``), which needs only ``VM.Config.Network`` on that VM:
nothing here touches the cluster's firewall (``/cluster/firewall``: its security groups and IP sets
need ``Sys.Modify`` on ``/``). Reads and writes go through ``ZoneApi`` (its own agent first, reads
failed over, writes sent once), and fail as it does: domain errors carrying Proxmox's message.

Proxmox inserts a new rule at the top (position 0) and renumbers the others; a rule's ``comment``
is how flex.plane tells its own rules from those someone added by hand.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from orchestrator.sources.proxmox.zone import ZoneApi


def _text(value: Any) -> str | None:
    return str(value) if value not in (None, "") else None


@dataclass(frozen=True)
class FirewallOptions:
    """The options flex.plane sets on a VM's firewall."""

    enable: bool = False
    policy_in: str = "ACCEPT"
    policy_out: str = "ACCEPT"
    dhcp: bool = False

    @classmethod
    def parse(cls, answer: Any) -> FirewallOptions:
        data = answer if isinstance(answer, Mapping) else {}
        return cls(
            enable=str(data.get("enable", 0)) == "1",
            policy_in=str(data.get("policy_in") or "ACCEPT"),
            policy_out=str(data.get("policy_out") or "ACCEPT"),
            dhcp=str(data.get("dhcp", 0)) == "1",
        )

    def render(self) -> dict[str, Any]:
        return {
            "enable": 1 if self.enable else 0,
            "policy_in": self.policy_in,
            "policy_out": self.policy_out,
            "dhcp": 1 if self.dhcp else 0,
        }


@dataclass(frozen=True)
class FirewallRule:
    """One rule of a VM's firewall. ``pos`` is where Proxmox has it (None for a rule to add);
    ``source``/``dest`` are an address, a CIDR or ``+<ipset>``; ``dport`` is Proxmox's list of ports
    and ranges (``22``, ``80,443``, ``8000:8080``)."""

    type: str
    action: str
    proto: str | None = None
    dport: str | None = None
    source: str | None = None
    dest: str | None = None
    enable: bool = True
    comment: str = ""
    pos: int | None = None

    @classmethod
    def parse(cls, entry: Mapping[str, Any]) -> FirewallRule:
        pos = entry.get("pos")
        return cls(
            type=str(entry.get("type") or ""),
            action=str(entry.get("action") or ""),
            proto=_text(entry.get("proto")),
            dport=_text(entry.get("dport")),
            source=_text(entry.get("source")),
            dest=_text(entry.get("dest")),
            enable=str(entry.get("enable", 0)) == "1",
            comment=str(entry.get("comment") or ""),
            pos=int(pos) if pos is not None else None,
        )

    def render(self) -> dict[str, Any]:
        params: dict[str, Any] = {"type": self.type, "action": self.action, "enable": 1 if self.enable else 0}
        for key, value in (
            ("proto", self.proto),
            ("dport", self.dport),
            ("source", self.source),
            ("dest", self.dest),
        ):
            if value is not None:
                params[key] = value
        if self.comment:
            params["comment"] = self.comment
        return params

    @property
    def unplaced(self) -> FirewallRule:
        """The rule as such, wherever it is (to compare with a rule to add)."""
        return FirewallRule(
            self.type, self.action, self.proto, self.dport, self.source, self.dest, self.enable, self.comment
        )


def ipset_entry(cidr: str) -> str:
    """An IP set entry as Proxmox keeps it: a single IPv4 address without its ``/32``."""
    return cidr[: -len("/32")] if cidr.endswith("/32") else cidr


class VmFirewall:
    """The firewalls of a zone's VMs (``ZoneApi``'s reads and writes: the same agents, failover, errors)."""

    def __init__(self, api: ZoneApi) -> None:
        self.api = api
        self.zone = api.zone

    @staticmethod
    def _base(node: str, vmid: int) -> str:
        return f"/nodes/{node}/qemu/{vmid}/firewall"

    # ----------------------------------------------------------- options

    def options(self, node: str, vmid: int) -> FirewallOptions:
        return FirewallOptions.parse(self.api._read(f"{self._base(node, vmid)}/options", node=node))

    def set_options(self, node: str, vmid: int, options: FirewallOptions) -> None:
        self.api._write(node, "PUT", f"{self._base(node, vmid)}/options", options.render())

    # ----------------------------------------------------------- rules

    def rules(self, node: str, vmid: int) -> list[FirewallRule]:
        """The VM's rules in Proxmox's order (position 0 first)."""
        answer = self.api._read(f"{self._base(node, vmid)}/rules", node=node)
        rules = [FirewallRule.parse(e) for e in answer or [] if isinstance(e, Mapping)]
        return sorted(rules, key=lambda r: r.pos if r.pos is not None else 0)

    def add_rule(self, node: str, vmid: int, rule: FirewallRule) -> None:
        """Add a rule at the top (position 0): the others move down by one."""
        self.api._write(node, "POST", f"{self._base(node, vmid)}/rules", rule.render())

    def delete_rule(self, node: str, vmid: int, pos: int) -> None:
        """Delete the rule at ``pos``: those below move up by one."""
        self.api._write(node, "DELETE", f"{self._base(node, vmid)}/rules/{pos}")

    # ----------------------------------------------------------- IP sets

    def ipsets(self, node: str, vmid: int) -> list[str]:
        """The names of the VM's IP sets."""
        answer = self.api._read(f"{self._base(node, vmid)}/ipset", node=node)
        return sorted(str(e["name"]) for e in answer or [] if isinstance(e, Mapping) and e.get("name"))

    def ipset(self, node: str, vmid: int, name: str) -> list[str]:
        """The entries (addresses and CIDRs) of one of the VM's IP sets."""
        answer = self.api._read(f"{self._base(node, vmid)}/ipset/{name}", node=node)
        return sorted(str(e["cidr"]) for e in answer or [] if isinstance(e, Mapping) and e.get("cidr"))

    def create_ipset(self, node: str, vmid: int, name: str, comment: str) -> None:
        self.api._write(node, "POST", f"{self._base(node, vmid)}/ipset", {"name": name, "comment": comment})

    def delete_ipset(self, node: str, vmid: int, name: str) -> None:
        """Delete an empty IP set."""
        self.api._write(node, "DELETE", f"{self._base(node, vmid)}/ipset/{name}")

    def add_entry(self, node: str, vmid: int, name: str, cidr: str) -> None:
        self.api._write(node, "POST", f"{self._base(node, vmid)}/ipset/{name}", {"cidr": cidr})

    def remove_entry(self, node: str, vmid: int, name: str, cidr: str) -> None:
        self.api._write(node, "DELETE", f"{self._base(node, vmid)}/ipset/{name}/{cidr}")
